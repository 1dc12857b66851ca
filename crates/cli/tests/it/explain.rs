//! `run --explain` (issue 34 item 9) on real SQLite files and a real PostgreSQL: each distinct
//! statement's plan taken once after warm-up into `plans.json`, shown by `report` (and its JSON),
//! and `compare` saying when a plan's shape changed between two runs.

use std::path::Path;

use serde_json::Value;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::pg::PgCluster;

/// The report's plans, from `report --json`.
fn plans(dir: &Path, run: &str) -> Vec<Value> {
    let r = report_json(dir, &join(dir, run));
    r["plans"]["plans"]
        .as_array()
        .unwrap_or_else(|| panic!("plans in the report: {r}"))
        .clone()
}

fn lines(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("{key} in {v}"))
        .iter()
        .map(|l| l.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn issue_34_a_sqlite_lookup_run_records_its_query_plan() {
    let dir = tempdir();
    let db = format!("sqlite:{}", s(&join(dir.path(), "l.db")));
    let run = |out: &str, explain: bool| {
        let mut a = Argv::run("lookup")
            .target(&db)
            .rows(500)
            .ops(50)
            .sessions(2)
            .out(out)
            .quiet();
        if explain {
            a = a.flag("--explain");
        }
        ok(dir.path(), &a.args());
    };
    run("a", true);
    let p = plans(dir.path(), "a");
    assert_eq!(
        p.len(),
        1,
        "one statement, explained once for both sessions: {p:?}"
    );
    assert_eq!(p[0]["event"], "lookup");
    assert_eq!(p[0]["sql"], "SELECT pad FROM dbscope_lookup WHERE id = ?1");
    assert_eq!(
        p[0]["rolled_back"], false,
        "EXPLAIN QUERY PLAN executes nothing"
    );
    let tree = lines(&p[0], "tree");
    assert!(
        tree[0].starts_with("SEARCH dbscope_lookup USING INTEGER PRIMARY KEY"),
        "{tree:?}"
    );
    // The key it was explained with is one the session looked up: within the table.
    let key: u64 = p[0]["params"][0].as_str().unwrap().parse().unwrap();
    assert!((1..=500).contains(&key), "{key}");
    let text = ok(dir.path(), &["report", "a"]);
    assert!(text.contains("plans (EXPLAIN QUERY PLAN):"), "{text}");
    assert!(
        text.contains("    SEARCH dbscope_lookup USING INTEGER PRIMARY KEY"),
        "{text}"
    );
    // The explaining is no event: the run's events are its lookups.
    let r = report_json(dir.path(), &join(dir.path(), "a"));
    assert_eq!(event(&r, "lookup")["count"], 50, "--ops is the run's total");
    assert_eq!(r["events"].as_array().unwrap().len(), 1, "{r}");
    // Without --explain: no plans file, no plans in the report.
    run("b", false);
    assert!(!join(dir.path(), "b/plans.json").exists());
    assert!(report_json(dir.path(), &join(dir.path(), "b"))
        .get("plans")
        .is_none());
    // bulkload: session 0's GROUP BY, after its step.
    ok(
        dir.path(),
        &Argv::run("bulkload")
            .target(&db)
            .rows(2000)
            .flag("--explain")
            .out("bl")
            .quiet()
            .args(),
    );
    let p = plans(dir.path(), "bl");
    assert_eq!(p.len(), 1, "{p:?}");
    assert_eq!(p[0]["event"], "groupby1");
    assert_eq!(
        lines(&p[0], "tree"),
        ["SCAN dbscope_bulkload", "USE TEMP B-TREE FOR GROUP BY"]
    );
}

/// On PostgreSQL the plan is EXPLAIN ANALYZE's, taken after the warm-up; with the primary key
/// dropped between two runs, `compare` says the plan changed and shows both.
#[test]
fn issue_34_a_postgres_lookup_plan_is_an_index_scan_and_compare_sees_it_change() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let db = pg.create_db("explain_lookup");
    let run = |out: &str| {
        ok(
            dir.path(),
            &Argv::run("lookup")
                .target(pg.uri(&db))
                .opt("--table", "lk")
                .rows(5000)
                .duration("1s")
                .opt("--warmup", "300ms")
                // Three sessions sharing one thread: a multiplexed session explains too.
                .sessions(3)
                .opt("--threads", "1")
                .flag("--explain")
                .out(out)
                .quiet()
                .args(),
        );
    };
    run("a");
    let p = plans(dir.path(), "a");
    assert_eq!(
        p.len(),
        1,
        "one statement, explained once for three sessions: {p:?}"
    );
    assert_eq!(lines(&p[0], "shape"), ["Index Scan using lk_pkey on lk"]);
    let tree = lines(&p[0], "tree");
    assert!(tree[0].contains("actual rows=1 loops=1"), "{tree:?}");
    assert!(tree[0].contains("buffers hit="), "{tree:?}");
    assert_eq!(p[0]["rolled_back"], true);
    assert!(
        p[0]["json"]["Plan"]["Node Type"] == "Index Scan",
        "{}",
        p[0]
    );
    // Taken after the warm-up, on the run's clock.
    assert!(p[0]["taken_s"].as_f64().unwrap() >= 0.3, "{}", p[0]);
    let text = ok(dir.path(), &["report", "a"]);
    assert!(
        text.contains("Index Scan using lk_pkey on lk  (actual rows=1"),
        "{text}"
    );

    pg.query(&db, "ALTER TABLE lk DROP CONSTRAINT lk_pkey");
    run("b");
    let p = plans(dir.path(), "b");
    assert_eq!(lines(&p[0], "shape"), ["Seq Scan on lk"]);
    let text = ok(dir.path(), &["compare", "a", "b"]);
    assert!(
        text.contains("PLAN CHANGED: lookup: SELECT pad FROM lk WHERE id = $1"),
        "{text}"
    );
    assert!(
        text.contains("A:\n      Index Scan using lk_pkey on lk  (actual"),
        "{text}"
    );
    assert!(text.contains("B:\n      Seq Scan on lk  (actual"), "{text}");
    let json: Value = serde_json::from_str(&ok(dir.path(), &["compare", "a", "b", "--json"]))
        .expect("compare --json is JSON");
    assert_eq!(json["plans"]["plans"][0]["changed"], true, "{json}");
    // A run against itself: the same plan.
    let text = ok(dir.path(), &["compare", "a", "a"]);
    assert!(text.contains("same plan: lookup:"), "{text}");
}

/// A script's SQL commands each get their plan with the parameters bound at the time; the write
/// is explained inside a transaction that is rolled back, so it leaves nothing behind.
#[test]
fn issue_34_a_script_run_records_each_sql_commands_plan() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let db = pg.create_db("explain_script");
    pg.query(
        &db,
        "CREATE TABLE acct(id int PRIMARY KEY, v int NOT NULL); \
         INSERT INTO acct SELECT g, 0 FROM generate_series(1, 100) g",
    );
    let f = join(dir.path(), "s.sql");
    std::fs::write(
        &f,
        "\\set id random(1, 100)\nBEGIN;\nUPDATE acct SET v = v + 1 WHERE id = :id;\n\
         SELECT v FROM acct WHERE id = :id;\nEND;\n",
    )
    .unwrap();
    ok(
        dir.path(),
        &Argv::run("script")
            .opt("-f", s(&f))
            .opt("-M", "extended")
            .target(pg.uri(&db))
            .ops(20)
            .flag("--explain")
            .out("r")
            .quiet()
            .args(),
    );
    let p = plans(dir.path(), "r");
    let update = p
        .iter()
        .find(|v| v["sql"].as_str().unwrap().starts_with("UPDATE acct"))
        .unwrap_or_else(|| panic!("the UPDATE's plan: {p:?}"));
    assert_eq!(lines(update, "shape")[0], "ModifyTable (Update) on acct");
    assert!(
        update["event"]
            .as_str()
            .unwrap()
            .ends_with("s.sql:3 UPDATE acct SET v = v + 1 WHERE id = :id;"),
        "{update}"
    );
    assert_eq!(update["rolled_back"], true);
    let id: i64 = update["params"][0].as_str().unwrap().parse().unwrap();
    assert!((1..=100).contains(&id), "{update}");
    let select = p
        .iter()
        .find(|v| v["sql"].as_str().unwrap().starts_with("SELECT v FROM acct"))
        .unwrap_or_else(|| panic!("the SELECT's plan: {p:?}"));
    assert!(
        lines(select, "shape")[0].contains("Scan") && lines(select, "shape")[0].contains("acct"),
        "{select}"
    );
    assert_eq!(p.len(), 2, "BEGIN and END are no plans: {p:?}");
    let notes = report_json(dir.path(), &join(dir.path(), "r"))["plans"]["notes"].to_string();
    assert!(notes.contains("BEGIN") && notes.contains("END"), "{notes}");
    // 20 updates of one each: the explained one was rolled back.
    assert_eq!(pg.query(&db, "SELECT sum(v) FROM acct"), "20");
}

/// `events` on PostgreSQL (the batch strategy): its two multi-row statements as last sent, each
/// explained in a transaction rolled back, so the history holds exactly the events written.
#[test]
fn issue_34_an_events_run_records_its_batch_statements_plans() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let db = pg.create_db("explain_events");
    ok(
        dir.path(),
        &Argv::run("events")
            .target(pg.uri(&db))
            .clients(4)
            .rate(100)
            .duration("1s")
            .strategy("batch")
            .fresh()
            .flag("--explain")
            .out("r")
            .quiet()
            .args(),
    );
    let p = plans(dir.path(), "r");
    let shapes: Vec<String> = p.iter().map(|v| lines(v, "shape")[0].clone()).collect();
    assert_eq!(
        shapes,
        [
            "ModifyTable (Insert) on events_history",
            "ModifyTable (Insert) on eventlastval"
        ],
        "{p:?}"
    );
    assert!(p
        .iter()
        .all(|v| v["event"] == "write" && v["rolled_back"] == true));
    let r = report_json(dir.path(), &join(dir.path(), "r"));
    let rows: u64 = pg
        .query(&db, "SELECT count(*) FROM events_history")
        .parse()
        .unwrap();
    assert_eq!(
        r["archive"]["written"].as_u64(),
        Some(rows),
        "{}",
        r["archive"]
    );
}
