//! The `bulkload` workload (issue 15, part 2) on real SQLite files and a real PostgreSQL server:
//! exactly the rows asked, loaded in parallel, and a GROUP BY answer checked to the last count.

use std::path::Path;

use serde_json::Value;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::pg::PgCluster;

/// Runs bulkload, checks its events and its counter section, returns the report.
fn load_and_check(dir: &Path, args: &[&str], rows: u64, groups: u64, sessions: u64) -> Value {
    let mut all = vec!["run", "bulkload", "--out", "r", "-q"];
    all.extend_from_slice(args);
    ok(dir, &all);
    let r = report_json(dir, &join(dir, "r"));
    assert_eq!(event(&r, "load")["count"], sessions, "one load per session");
    assert_eq!(event(&r, "groupby1")["count"], 1);
    assert_eq!(event(&r, "groupby2")["count"], 1);
    let b = &r["bulkload"];
    assert_eq!(b["rows_loaded"], rows, "{b}");
    assert_eq!(b["groups"], groups.min(rows), "{b}");
    let check = b["check"].as_str().unwrap();
    assert_eq!(
        check,
        format!("ok: {} groups, counts sum to {rows}", groups.min(rows))
    );
    let steps = b["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 3, "{b}");
    for st in steps {
        assert_eq!(st["rows"], rows);
        assert!(st["rows_per_s"].as_f64().unwrap() > 0.0, "{st}");
        assert!(st["mb_per_s"].as_f64().unwrap() > 0.0, "{st}");
    }
    std::fs::remove_dir_all(join(dir, "r")).unwrap();
    r
}

#[test]
fn bulkload_on_sqlite_loads_every_row_and_checks_the_groups() {
    let dir = tempdir();
    let db = format!("sqlite:{}", s(&dir.path().join("b.db")));
    // Rows not a multiple of the sessions nor of the groups: shares and counts must still add up.
    load_and_check(
        dir.path(),
        &[
            "--target",
            &db,
            "--rows",
            "10007",
            "--sessions",
            "3",
            "--into",
            "logged",
        ],
        10007,
        4100,
        3,
    );
    let conn = rusqlite::Connection::open(dir.path().join("b.db")).unwrap();
    let (n, d, minid, maxid): (i64, i64, i64, i64) = conn
        .query_row(
            "SELECT count(*), count(DISTINCT id), min(id), max(id) FROM dbscope_bulkload",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
        )
        .unwrap();
    assert_eq!((n, d, minid, maxid), (10007, 10007, 1, 10007));
    load_and_check(
        dir.path(),
        &[
            "--target",
            &db,
            "--rows",
            "5000",
            "--groups",
            "7",
            "--sessions",
            "2",
            "--into",
            "unlogged",
        ],
        5000,
        7,
        2,
    );
    // Fewer rows than groups: as many groups as rows.
    load_and_check(
        dir.path(),
        &[
            "--target",
            &db,
            "--rows",
            "50",
            "--set",
            "temp_store=memory",
            "--into",
            "temp",
        ],
        50,
        4100,
        1,
    );
    let place = dir.path().join("flash");
    std::fs::create_dir(&place).unwrap();
    load_and_check(
        dir.path(),
        &[
            "--target",
            &db,
            "--rows",
            "3000",
            "--sessions",
            "2",
            "--into",
            "logged",
            "--tablespace-dir",
            s(&place),
        ],
        3000,
        4100,
        2,
    );
    let conn = rusqlite::Connection::open(place.join("dbscope_bulkload.sqlite")).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM dbscope_bulkload", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3000, "the table lives on the directory");
}

#[test]
fn bulkload_bad_input_is_a_clear_error() {
    let dir = tempdir();
    fails(
        dir.path(),
        &Argv::run("bulkload").rows(0).args(),
        2,
        &["--rows must be at least 1"],
    );
    fails(
        dir.path(),
        &Argv::run("bulkload").rows(10).opt("--groups", 0).args(),
        2,
        &["--groups 0"],
    );
    fails(
        dir.path(),
        &Argv::run("bulkload")
            .rows(10)
            .opt("--into", "global")
            .args(),
        2,
        &["--into \"global\""],
    );
    fails(
        dir.path(),
        &Argv::run("bulkload")
            .rows(10)
            .sessions(2)
            .opt("--into", "temp")
            .args(),
        2,
        &[
            "a temporary table belongs to one connection",
            "--into unlogged",
        ],
    );
    fails(
        dir.path(),
        &Argv::run("bulkload").rows(10).ops(3).args(),
        2,
        &["--ops and --duration do not apply"],
    );
}

#[test]
fn bulkload_on_postgres_into_each_kind() {
    let pg = PgCluster::shared();
    let db = pg.create_db("bulkload");
    let uri = pg.uri(&db);
    let dir = tempdir();
    load_and_check(
        dir.path(),
        &[
            "--target",
            &uri,
            "--rows",
            "20011",
            "--sessions",
            "4",
            "--into",
            "unlogged",
        ],
        20011,
        4100,
        4,
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT relpersistence FROM pg_class WHERE relname = 'dbscope_bulkload'"
        ),
        "u"
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT count(*), count(DISTINCT id), max(id) FROM dbscope_bulkload"
        ),
        "20011|20011|20011"
    );
    load_and_check(
        dir.path(),
        &[
            "--target",
            &uri,
            "--rows",
            "9000",
            "--sessions",
            "2",
            "--into",
            "logged",
        ],
        9000,
        4100,
        2,
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT relpersistence FROM pg_class WHERE relname = 'dbscope_bulkload'"
        ),
        "p"
    );
    load_and_check(
        dir.path(),
        &["--target", &uri, "--rows", "8200", "--into", "temp"],
        8200,
        4100,
        1,
    );
}

/// A trigger (added by an event trigger when dbscope creates the table) moves one row to another
/// group: the load is complete, the GROUP BY answer is wrong, and the run must fail loudly.
#[test]
fn bulkload_on_postgres_fails_loudly_on_a_wrong_group_by() {
    let pg = PgCluster::shared();
    let db = pg.create_db("bulkload_wrong");
    pg.query(
        &db,
        "CREATE FUNCTION shift_row() RETURNS trigger LANGUAGE plpgsql AS $$ \
           BEGIN IF NEW.id = 5 THEN NEW.col := 0; END IF; RETURN NEW; END $$; \
         CREATE FUNCTION add_trigger() RETURNS event_trigger LANGUAGE plpgsql AS $$ \
           BEGIN IF EXISTS (SELECT 1 FROM pg_event_trigger_ddl_commands() \
                            WHERE object_identity = 'public.dbscope_bulkload') THEN \
             EXECUTE 'CREATE TRIGGER shift BEFORE INSERT ON dbscope_bulkload FOR EACH ROW \
                      EXECUTE FUNCTION shift_row()'; \
           END IF; END $$; \
         CREATE EVENT TRIGGER corrupt ON ddl_command_end WHEN TAG IN ('CREATE TABLE') \
           EXECUTE FUNCTION add_trigger()",
    );
    let dir = tempdir();
    let out = run(
        dir.path(),
        &Argv::run("bulkload")
            .target(pg.uri(&db))
            .rows(1000)
            .opt("--groups", 10)
            .sessions(2)
            .opt("--into", "unlogged")
            .out("r")
            .quiet()
            .args(),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("wrong result: GROUP BY returned col ") && stderr.contains("check:groupby"),
        "{stderr}"
    );
    let m = manifest(&join(dir.path(), "r"));
    assert_eq!(m["outcome"], "failed");
    let r = report_json(dir.path(), &join(dir.path(), "r"));
    assert!(
        r["bulkload"]["check"]
            .as_str()
            .unwrap()
            .starts_with("wrong result"),
        "{}",
        r["bulkload"]
    );
}

/// Issue 34 item 6: `--repeat N` runs the steps N times in one run (the table emptied in
/// between), each step an event per repetition, so `compare` tests them; single runs are shown
/// side by side ("one sample: no test") instead of being refused.
#[test]
fn issue_34_bulkload_repeat_gives_compare_samples_on_sqlite() {
    let dir = tempdir();
    let d = dir.path();
    let db = format!("sqlite:{}", s(&d.join("b.db")));
    let run_ = |out: &str, sessions: &str, extra: &[&str]| {
        let mut a = vec![
            "run",
            "bulkload",
            "--target",
            &db,
            "--rows",
            "3001",
            "--groups",
            "7",
            "--into",
            "logged",
            "--sessions",
            sessions,
            "--out",
            out,
            "-q",
        ];
        a.extend_from_slice(extra);
        ok(d, &a);
        report_json(d, &join(d, out))
    };
    let r = run_("rep", "2", &["--repeat", "3"]);
    assert_eq!(event(&r, "load")["count"], 6, "2 sessions × 3 repetitions");
    assert_eq!(event(&r, "groupby1")["count"], 3);
    assert_eq!(event(&r, "groupby2")["count"], 3);
    let b = &r["bulkload"];
    assert_eq!(b["check"], "ok: 7 groups, counts sum to 3001", "{b}");
    let steps = b["steps"].as_array().unwrap();
    assert_eq!(steps.len(), 9, "{b}");
    assert_eq!(steps[0]["step"], "load, repetition 1", "{b}");
    assert_eq!(steps[8]["step"], "group by #2, repetition 3", "{b}");
    assert!(steps.iter().all(|st| st["rows"] == 3001), "{b}");
    assert_eq!(manifest(&join(d, "rep"))["workload"]["params"]["repeat"], 3);
    let conn = rusqlite::Connection::open(d.join("b.db")).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM dbscope_bulkload", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 3001, "emptied between repetitions, not appended to");

    // One sample each: side by side, no test.
    run_("one-a", "1", &[]);
    run_("one-b", "2", &[]);
    let text = ok(d, &["compare", "one-a", "one-b"]);
    assert!(
        text.contains("groupby1   n  A 1   B 1   one sample: no test\n  elapsed  A "),
        "{text}"
    );
    assert!(text.contains("\n  rows/s   A "), "{text}");
    assert!(
        text.contains("load   n  A 1   B 2   1 in A and 2 in B"),
        "{text}"
    );
    // Four repetitions each: tested.
    run_("four-a", "1", &["--repeat", "4"]);
    run_("four-b", "1", &["--repeat", "4"]);
    let c: Value =
        serde_json::from_str(&ok(d, &["compare", "four-a", "four-b", "--json"])).unwrap();
    let names: Vec<&str> = c["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["load", "groupby1", "groupby2"], "{c}");
    assert!(c["untested"].as_array().unwrap().is_empty(), "{c}");
    assert!(c["events"][1]["verdict"]["call"] != "too_few", "{c}");

    fails(
        d,
        &Argv::run("commit").ops(3).opt("--repeat", 2).args(),
        2,
        &["--repeat applies to the bulkload workload only, not commit"],
    );
}

/// Issue 34 item 6: `--repeat` on PostgreSQL, a temporary table (one session) and an unlogged
/// one loaded in parallel, each emptied between repetitions.
#[test]
fn issue_34_bulkload_repeat_on_postgres() {
    let pg = PgCluster::shared();
    let db = pg.create_db("bulkload_repeat");
    let uri = pg.uri(&db);
    let dir = tempdir();
    for (into, sessions) in [("temp", "1"), ("unlogged", "3")] {
        let out = format!("r-{into}");
        ok(
            dir.path(),
            &[
                "run",
                "bulkload",
                "--target",
                &uri,
                "--rows",
                "4001",
                "--groups",
                "13",
                "--into",
                into,
                "--sessions",
                sessions,
                "--repeat",
                "2",
                "--out",
                &out,
                "-q",
            ],
        );
        let r = report_json(dir.path(), &join(dir.path(), &out));
        let n: u64 = sessions.parse().unwrap();
        assert_eq!(event(&r, "load")["count"], 2 * n, "{into}");
        assert_eq!(event(&r, "groupby2")["count"], 2, "{into}");
        assert_eq!(r["bulkload"]["check"], "ok: 13 groups, counts sum to 4001");
    }
    assert_eq!(
        pg.query(&db, "SELECT count(*), max(id) FROM dbscope_bulkload"),
        "4001|4001"
    );
}
