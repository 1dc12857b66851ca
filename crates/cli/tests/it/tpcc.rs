//! `dbscope run tpcc` (issue 29) on a real PostgreSQL and a real SQLite file: the build recorded
//! as its own run and reused, the five transactions as events named after their types, NOPM from
//! the schema equal to the New-Orders dbscope saw commit (the 1 % rolled back counted apart, not
//! as errors), the consistency conditions after the run, `tpcc check` naming a broken district,
//! and bad input refused.

use std::path::Path;

use serde_json::Value;

use crate::cli::*;
use crate::common::mariadb::MariaDb;
use crate::common::pg::PgCluster;

const TYPES: [&str; 5] = [
    "new_order",
    "payment",
    "order_status",
    "delivery",
    "stock_level",
];

fn n(v: &Value) -> i64 {
    v.as_i64().unwrap_or_else(|| panic!("a whole number: {v}"))
}

/// What every tpcc run must show: NOPM first in the text, the schema's new orders equal to the
/// committed ones dbscope counted, every type recorded by every session, rollbacks not errors,
/// and the consistency conditions held.
fn assert_run(dir: &Path, run: &Path, sessions: usize) -> Value {
    let text = ok(dir, &["report", s(run)]);
    assert!(text.starts_with("TPC-C     NOPM "), "{text}");
    let r = report_json(dir, run);
    let t = &r["tpcc"];
    assert!(
        t.as_object().is_some(),
        "tpcc figures come first in JSON: {r}"
    );
    let committed = n(&t["new_orders_committed"]);
    assert!(committed > 0, "{t}");
    assert_eq!(
        n(&t["new_orders"]),
        committed,
        "NOPM's count from sum(d_next_o_id) is the New-Orders that committed: {t}"
    );
    assert!(t["nopm"].as_f64().unwrap() > 0.0, "{t}");
    assert!(t["tpm"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(t["consistent"], true, "{r}");
    let counters = &r["counters_tpcc"];
    for (i, ty) in TYPES.iter().enumerate() {
        let e = event(&r, ty);
        let row = &counters["transactions"][i];
        assert_eq!(row["type"], *ty);
        // Every transaction is one event: committed, rolled back, or failed (its error class).
        assert_eq!(
            n(&e["count"]),
            n(&row["committed"]) + n(&row["rolled_back"]) + n(&row["failed"]),
            "{ty}: {e} {row}"
        );
        assert_eq!(n(&e["errors"]), n(&row["failed"]), "{ty}");
    }
    let no = event(&r, "new_order");
    assert_eq!(
        no["sessions"]["per_session"].as_object().unwrap().len(),
        sessions,
        "every session ran New-Orders: {no}"
    );
    assert_eq!(
        n(&counters["transactions"][0]["rolled_back"]),
        n(&t["new_orders_rolled_back"])
    );
    r
}

#[test]
fn tpcc_on_postgres_builds_runs_consistent_reuses_and_checks() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let db = pg.create_db("tpcc_run");
    let uri = pg.uri(&db);
    let run1 = dir.path().join("run1");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "2",
            "--build-sessions",
            "2",
            "-c",
            "4",
            "-d",
            "4s",
            "--max-tries",
            "10",
            "--target",
            &uri,
            "-o",
            s(&run1),
            "-q",
        ],
    );
    // The build is a run of its own beside it, one event per step.
    let build = dir.path().join("run1-build");
    let b = report_json(dir.path(), &build);
    assert_eq!(b["run"]["workload"], "tpcc-build");
    assert_eq!(
        n(&event(&b, "load")["count"]),
        2,
        "one load per build session"
    );
    for step in ["create-tables", "create-indexes", "analyze"] {
        assert_eq!(n(&event(&b, step)["count"]), 1, "{step}");
    }
    let tables: Vec<(String, i64)> = b["tpcc_build"]["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["table"].as_str().unwrap().to_string(), n(&t["rows"])))
        .collect();
    assert_eq!(tables.len(), 9, "{b}");
    assert_eq!(
        tables[0],
        ("warehouse".to_string(), 2),
        "in the schema's order"
    );
    assert!(
        tables.contains(&("item".to_string(), 100_000)),
        "ITEM once: {b}"
    );
    assert!(tables.contains(&("stock".to_string(), 200_000)), "{b}");
    let r = assert_run(dir.path(), &run1, 4);
    assert_eq!(
        r["tpcc"]["tpm_source"],
        "pg_stat_database: xact_commit + xact_rollback of the database"
    );
    let m = manifest(&run1);
    assert!(
        m["workload"]["params"]["build"]
            .as_str()
            .unwrap()
            .starts_with("built, recorded in"),
        "{m}"
    );

    // The same shape again: reused, no build run.
    let run2 = dir.path().join("run2");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "2",
            "-c",
            "2",
            "-d",
            "2s",
            "--max-tries",
            "10",
            "--target",
            &uri,
            "-o",
            s(&run2),
            "-q",
        ],
    );
    assert!(!dir.path().join("run2-build").exists());
    assert_eq!(manifest(&run2)["workload"]["params"]["build"], "reused");
    assert_run(dir.path(), &run2, 2);

    // Another shape without --fresh is refused, naming --fresh.
    fails(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "3",
            "--target",
            &uri,
            "-d",
            "1s",
        ],
        2,
        &["2 warehouse(s), not 3", "--fresh"],
    );

    // `tpcc check` on demand: holds; then a broken district is named and the exit code is 1.
    let out = ok(dir.path(), &["tpcc", "check", "--target", &uri]);
    assert!(out.contains("hold"), "{out}");
    pg.query(
        &db,
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 2 AND d_id = 7",
    );
    let o = run(dir.path(), &["tpcc", "check", "--target", &uri]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("condition 3.3.2.2") && text.contains("warehouse 2 district 7"),
        "{text}"
    );

    // A run after the breakage: its check fails the exit code and is recorded in the run.
    let run3 = dir.path().join("run3");
    let o = run(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "2",
            "-c",
            "2",
            "-d",
            "1s",
            "--max-tries",
            "10",
            "--target",
            &uri,
            "-o",
            s(&run3),
            "-q",
        ],
    );
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r3 = report_json(dir.path(), &run3);
    assert_eq!(r3["tpcc"]["consistent"], false);
    let notes = r3["tpcc_check"]["notes"].to_string();
    assert!(notes.contains("warehouse 2 district 7"), "{notes}");
}

/// `--server-side`: the transactions as PL/pgSQL functions, one call each; the same figures and
/// consistency as client-side, New-Order's unused item rolled back (nothing of it kept), Payment
/// by last name the ⌈n/2⌉-th customer of that name by first name.
#[test]
fn tpcc_server_side_on_postgres_calls_functions_and_stays_consistent() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let db = pg.create_db("tpcc_server");
    let uri = pg.uri(&db);
    let run1 = dir.path().join("server");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--server-side",
            "--warehouses",
            "2",
            "--build-sessions",
            "2",
            "-c",
            "3",
            "-d",
            "3s",
            "--max-tries",
            "10",
            "--target",
            &uri,
            "-o",
            s(&run1),
            "-q",
        ],
    );
    assert_run(dir.path(), &run1, 3);
    assert_eq!(
        manifest(&run1)["workload"]["params"]["sql"],
        "server-side (PL/pgSQL functions dbscope_tpcc_*)"
    );
    // The six functions (five transactions and the by-name lookup) are installed.
    let installed = pg.query(
        &db,
        "SELECT string_agg(proname, ',' ORDER BY proname) FROM pg_proc \
         WHERE proname LIKE 'dbscope_tpcc_%'",
    );
    assert_eq!(
        installed,
        "dbscope_tpcc_customer,dbscope_tpcc_delivery,dbscope_tpcc_neword,dbscope_tpcc_ostat,\
         dbscope_tpcc_payment,dbscope_tpcc_slev"
    );

    // The unused item: SQLSTATE TPCRB, and nothing of the order kept.
    let count = || {
        pg.query(
            &db,
            "SELECT (SELECT sum(d_next_o_id) FROM district) || ',' || \
             (SELECT count(*) FROM order_line) || ',' || (SELECT sum(s_ytd) FROM stock)",
        )
    };
    let before = count();
    let mut c = pg.connect(&db);
    let e = c
        .simple_query("SELECT dbscope_tpcc_neword(1, 3, 7, '{1,2,100001}', '{1,2,1}', '{5,5,5}')")
        .expect_err("the unused item raises");
    assert_eq!(
        e.code().map(|c| c.code()),
        Some("TPCRB"),
        "{}",
        crate::common::pg::describe(&e)
    );
    assert_eq!(count(), before, "a rolled-back New-Order leaves nothing");
    // A valid one commits: one order of 2 lines more.
    c.simple_query("SELECT dbscope_tpcc_neword(1, 3, 7, '{1,2}', '{1,2}', '{5,5}')")
        .unwrap();
    let after: Vec<i64> = count().split(',').map(|x| x.parse().unwrap()).collect();
    let before: Vec<i64> = before.split(',').map(|x| x.parse().unwrap()).collect();
    assert_eq!(
        after,
        [before[0] + 1, before[1] + 2, before[2] + 10],
        "next order id, two lines, stock YTD"
    );

    // Payment by last name: the middle one (⌈n/2⌉) of those of that name by first name.
    let last = pg.query(
        &db,
        "SELECT c_last FROM customer WHERE c_w_id = 1 AND c_d_id = 2 \
         GROUP BY c_last HAVING count(*) >= 2 ORDER BY count(*) DESC, c_last LIMIT 1",
    );
    let ids: Vec<String> = pg
        .query(
            &db,
            &format!(
                "SELECT c_id FROM customer WHERE c_w_id = 1 AND c_d_id = 2 AND c_last = '{last}' \
                 ORDER BY c_first"
            ),
        )
        .lines()
        .map(String::from)
        .collect();
    let paid = pg.query(
        &db,
        &format!("SELECT dbscope_tpcc_payment(1, 2, 1, 2, 0, '{last}', 12.34)"),
    );
    assert_eq!(paid, ids[ids.len().div_ceil(2) - 1], "{last}: {ids:?}");
    let out = ok(dir.path(), &["tpcc", "check", "--target", &uri]);
    assert!(out.contains("hold"), "{out}");
}

/// TPC-C on MariaDB (issue 30's target): InnoDB tables loaded by LOAD DATA LOCAL INFILE from
/// parallel build sessions, the transactions in MySQL's dialect (FOR UPDATE, no RETURNING),
/// NOPM from the schema equal to the committed New-Orders, TPM from the server's Com_commit +
/// Com_rollback equal to every try dbscope ended (a private server: nobody else commits there),
/// the consistency conditions after the run, and a broken district named by `tpcc check`.
#[test]
fn tpcc_on_mariadb_builds_runs_consistent_and_counts_tpm_from_the_server() {
    let my = MariaDb::private();
    let dir = tempdir();
    let db = my.create_db("tpcc");
    let uri = my.uri(&db);
    let run1 = dir.path().join("my");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "2",
            "--build-sessions",
            "2",
            "-c",
            "3",
            "-d",
            "4s",
            "--max-tries",
            "10",
            "--target",
            &uri,
            "-o",
            s(&run1),
            "-q",
        ],
    );
    let b = report_json(dir.path(), &dir.path().join("my-build"));
    assert_eq!(n(&event(&b, "load")["count"]), 2, "two build sessions");
    let rows = b["tpcc_build"]["tables"].to_string();
    assert!(
        rows.contains(r#""rows":200000,"table":"stock""#)
            || rows.contains(r#""table":"stock","rows":200000"#),
        "{rows}"
    );
    assert_eq!(
        my.query(
            &db,
            "SELECT GROUP_CONCAT(DISTINCT engine) FROM information_schema.tables \
             WHERE table_schema = DATABASE()"
        ),
        "InnoDB"
    );
    assert_eq!(my.query(&db, "SELECT count(*) FROM stock"), "200000");
    // The build made the tables: their engines are in its manifest, read once they exist.
    let built = manifest(&dir.path().join("my-build"));
    for table in ["stock", "order_line", "warehouse"] {
        assert_eq!(
            built["target"]["settings_effective"][format!("engine.{table}")],
            "InnoDB",
            "{table}: {}",
            built["target"]
        );
    }
    let r = assert_run(dir.path(), &run1, 3);
    let t = &r["tpcc"];
    assert_eq!(
        t["tpm_source"],
        "SHOW GLOBAL STATUS: Com_commit + Com_rollback of the server"
    );
    // Every try ended in a COMMIT or a ROLLBACK statement (the 1 %, and each failed try).
    let tries: i64 = r["counters_tpcc"]["transactions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            n(&row["committed"]) + n(&row["rolled_back"]) + n(&row["failed"]) + n(&row["retries"])
        })
        .sum();
    assert_eq!(n(&r["counters_tpcc"]["tpm_transactions"]), tries, "{r}");

    let out = ok(dir.path(), &["tpcc", "check", "--target", &uri]);
    assert!(out.contains("hold"), "{out}");
    my.query(
        &db,
        "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = 2 AND d_id = 7",
    );
    let o = run(dir.path(), &["tpcc", "check", "--target", &uri]);
    assert_eq!(o.status.code(), Some(1));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains("condition 3.3.2.2") && text.contains("warehouse 2 district 7"),
        "{text}"
    );
}

#[test]
fn tpcc_on_sqlite_every_session_progresses_and_stays_consistent() {
    let dir = tempdir();
    let db = dir.path().join("tpcc.db");
    let target = format!("sqlite:{}", s(&db));
    let run = dir.path().join("run");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "1",
            "-c",
            "3",
            "-d",
            "3s",
            "--max-tries",
            "5",
            "--target",
            &target,
            "-o",
            s(&run),
            "-q",
        ],
    );
    let r = assert_run(dir.path(), &run, 3);
    assert!(
        r["tpcc"]["tpm_source"]
            .as_str()
            .unwrap()
            .starts_with("dbscope's count"),
        "{r}"
    );
    let b = report_json(dir.path(), &dir.path().join("run-build"));
    assert_eq!(
        n(&event(&b, "load")["count"]),
        1,
        "SQLite loads with one writer"
    );

    // --mix: only Payment.
    let run2 = dir.path().join("run2");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--mix",
            "0,100,0,0,0",
            "-d",
            "1s",
            "--target",
            &target,
            "-o",
            s(&run2),
            "-q",
        ],
    );
    let r2 = report_json(dir.path(), &run2);
    let names: Vec<&str> = r2["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["payment"], "{r2}");
    assert_eq!(r2["tpcc"]["consistent"], true);
}

#[test]
fn tpcc_bad_input_is_refused() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&dir.path().join("x.db")));
    fails(
        dir.path(),
        &["run", "tpcc", "--warehouses", "0", "--target", &target],
        2,
        &["--warehouses 0: expected a whole number of at least 1"],
    );
    fails(
        dir.path(),
        &["run", "tpcc", "--mix", "45,43,4,4,5", "--target", &target],
        2,
        &["--mix", "add up to 101, not 100"],
    );
    fails(
        dir.path(),
        &["run", "tpcc", "--mix", "45,43,4,4", "--target", &target],
        2,
        &["five percentages"],
    );
    fails(
        dir.path(),
        &["run", "tpcc", "--rate", "100", "--target", &target],
        2,
        &["--rate applies to", "not tpcc"],
    );
    fails(
        dir.path(),
        &["run", "commit", "--warehouses", "2", "--target", &target],
        2,
        &["--warehouses applies to the tpcc workload only"],
    );
    fails(
        dir.path(),
        &["run", "tpcc", "--server-side", "--target", &target],
        2,
        &["--server-side", "PostgreSQL"],
    );
    fails(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--server-side",
            "--per-statement",
            "--target",
            &target,
        ],
        2,
        &["--per-statement", "--server-side"],
    );
    fails(
        dir.path(),
        &["run", "tpcc", "--target", "null"],
        2,
        &["tpcc needs a database"],
    );
    // Tables named like TPC-C's that no dbscope build recorded are not dropped.
    let db = dir.path().join("theirs.db");
    let made = std::process::Command::new("sqlite3")
        .arg(&db)
        .arg("CREATE TABLE warehouse (w_id int)")
        .status()
        .expect("the sqlite3 shell runs");
    assert!(made.success());
    fails(
        dir.path(),
        &["run", "tpcc", "--target", &format!("sqlite:{}", s(&db))],
        2,
        &["no recorded dbscope build", "--fresh"],
    );
    assert!(
        !dir.path().join("runs").exists()
            || std::fs::read_dir(dir.path().join("runs"))
                .unwrap()
                .next()
                .is_none(),
        "refused runs leave no run directory"
    );
}

/// `--all-warehouses`: one session's transactions land on every warehouse, where without it a
/// session keeps to its home warehouse.
#[test]
fn tpcc_all_warehouses_spreads_one_session_over_every_warehouse() {
    let dir = tempdir();
    let db = dir.path().join("tpcc.db");
    let target = format!("sqlite:{}", s(&db));
    let orders_per_warehouse = || -> Vec<i64> {
        let out = std::process::Command::new("sqlite3")
            .arg(&db)
            .arg("SELECT sum(d_next_o_id) FROM district GROUP BY d_w_id ORDER BY d_w_id")
            .output()
            .expect("the sqlite3 shell runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| l.trim().parse().unwrap())
            .collect()
    };
    let home = dir.path().join("home");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "2",
            "--mix",
            "100,0,0,0,0",
            "--ops",
            "40",
            "--target",
            &target,
            "-o",
            s(&home),
            "-q",
        ],
    );
    let loaded = 10 * 3001;
    assert_eq!(
        orders_per_warehouse(),
        [
            loaded + n(&report_json(dir.path(), &home)["tpcc"]["new_orders"]),
            loaded
        ],
        "one session keeps to warehouse 1"
    );
    let all = dir.path().join("all");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--warehouses",
            "2",
            "--mix",
            "100,0,0,0,0",
            "--ops",
            "200",
            "--all-warehouses",
            "--target",
            &target,
            "-o",
            s(&all),
            "-q",
        ],
    );
    let after = orders_per_warehouse();
    assert!(after[1] > loaded, "warehouse 2 took new orders: {after:?}");
    let r = report_json(dir.path(), &all);
    assert_eq!(
        r["run"]["params"]["home_warehouse"],
        "any (--all-warehouses)"
    );
    assert_eq!(r["tpcc"]["consistent"], true);
}

/// `--per-statement`: every statement of a transaction an event `<type>.<statement>` beside the
/// transaction's, one per execution: a begin and an order row per New-Order, a commit per one
/// committed, a stock update and an order line per line (the database's new order lines, when
/// none rolled back).
#[test]
fn tpcc_per_statement_records_each_statement_as_an_event() {
    let dir = tempdir();
    let db = dir.path().join("tpcc.db");
    let target = format!("sqlite:{}", s(&db));
    let out = dir.path().join("ps");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--per-statement",
            "--ops",
            "150",
            "--target",
            &target,
            "-o",
            s(&out),
            "-q",
        ],
    );
    let r = report_json(dir.path(), &out);
    let count = |name: &str| n(&event(&r, name)["count"]);
    let t = &r["counters_tpcc"]["transactions"];
    let committed = |i: usize| n(&t[i]["committed"]);
    let rolled_back = n(&t[0]["rolled_back"]);
    assert_eq!(n(&t[0]["failed"]), 0, "one session: no conflict");
    assert_eq!(count("new_order.begin"), count("new_order"));
    assert_eq!(count("new_order.insert_orders"), count("new_order"));
    assert_eq!(count("new_order.commit"), committed(0));
    if rolled_back > 0 {
        assert_eq!(count("new_order.rollback"), rolled_back);
    }
    assert_eq!(count("payment.insert_history"), committed(1));
    assert_eq!(
        count("new_order.update_stock"),
        count("new_order.insert_order_line")
    );
    let lines: i64 = {
        let o = std::process::Command::new("sqlite3")
            .arg(&db)
            .arg("SELECT count(*) FROM order_line WHERE ol_o_id > 3000")
            .output()
            .expect("the sqlite3 shell runs");
        String::from_utf8_lossy(&o.stdout).trim().parse().unwrap()
    };
    assert!(lines > 0);
    if rolled_back == 0 {
        assert_eq!(count("new_order.insert_order_line"), lines);
    } else {
        // A rolled-back New-Order's lines before the unused item were sent, then undone.
        assert!(count("new_order.insert_order_line") > lines);
    }
}

/// `--keying-thinking`: each transaction after its keying time (2 s for Order-Status, exact) and
/// before its think time, each an event of its own; the transaction's latency without them; the
/// run's end cuts a delay short instead of outlasting `--duration`.
#[test]
fn tpcc_keying_thinking_records_the_delays_apart_from_the_transactions() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&dir.path().join("tpcc.db")));
    let out = dir.path().join("kt");
    ok(
        dir.path(),
        &[
            "run",
            "tpcc",
            "--keying-thinking",
            "--mix",
            "0,0,100,0,0",
            "-c",
            "3",
            "-d",
            "4s",
            "--target",
            &target,
            "-o",
            s(&out),
            "-q",
        ],
    );
    let r = report_json(dir.path(), &out);
    let keying = event(&r, "order_status.keying");
    let txn = event(&r, "order_status");
    let think = event(&r, "order_status.think");
    let us = |e: &Value, k: &str| e["summary_us"][k].as_f64().unwrap();
    // Every session keyed for 2 s, then ran its Order-Status, then thought.
    assert!(n(&txn["count"]) >= 3, "{txn}");
    assert_eq!(txn["sessions"]["per_session"].as_object().unwrap().len(), 3);
    assert!(n(&keying["count"]) >= n(&txn["count"]), "{keying}");
    assert!(
        (2_000_000.0..2_500_000.0).contains(&us(keying, "max")),
        "the keying time is 2 s (and a late wake-up on a busy machine): {keying}"
    );
    assert_eq!(
        n(&think["count"]),
        n(&txn["count"]),
        "a think time after each transaction"
    );
    assert!(
        us(txn, "max") < 1_000_000.0,
        "the transaction's latency leaves the delays out: {txn}"
    );
    // Think times drawn with mean 10 s are cut at the run's end (4 s), not waited out.
    assert!(us(think, "max") < 2_500_000.0, "{think}");
    assert!(
        r["run"]["elapsed_s"].as_f64().unwrap() < 6.0,
        "{}",
        r["run"]
    );
    assert!(r["run"]["params"]["keying_thinking"]
        .as_str()
        .unwrap()
        .starts_with("clause 5.2.5"));
}
