//! The MariaDB/MySQL target (issue 30) on a real MariaDB server (`common::mariadb`).

use std::path::Path;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::mariadb::MariaDb;

fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn commit_run_on_mariadb_records_the_server_and_hides_the_password() {
    let my = MariaDb::shared();
    let db = my.create_db("commit");
    let dir = tempdir();
    let uri = my.uri(&db);
    let out = run(
        dir.path(),
        &Argv::run("commit")
            .target(&uri)
            .sessions(4)
            .ops(100)
            .set("sql_mode=ANSI")
            .out("m")
            .args(),
    );
    let printed = all_output(&out);
    assert!(out.status.success(), "{printed}");
    let run_dir = join(dir.path(), "m");
    let m = manifest(&run_dir);
    assert_eq!(m["outcome"], "complete");
    let t = &m["target"];
    assert_eq!(t["kind"], "mysql");
    assert!(
        t["server_version"].as_str().unwrap().contains("MariaDB"),
        "{t}"
    );
    assert!(
        t["settings_effective"]["sql_mode"]
            .as_str()
            .unwrap()
            .contains("ANSI_QUOTES"),
        "the session variable is read back: {t}"
    );
    assert!(
        t["settings_effective"]["innodb_flush_log_at_trx_commit"].is_string(),
        "{t}"
    );
    let r = report_json(dir.path(), &run_dir);
    for name in ["update", "commit"] {
        assert_eq!(event(&r, name)["count"], 400, "{name}");
    }
    assert_eq!(
        my.query(&db, "SELECT SUM(v), COUNT(*) FROM dbscope_commit"),
        "400\t4"
    );
    let secret = my.password();
    assert!(uri.contains(secret));
    assert!(!printed.contains(secret), "password printed: {printed}");
    for e in std::fs::read_dir(&run_dir).unwrap() {
        let p = e.unwrap().path();
        let text = String::from_utf8_lossy(&std::fs::read(&p).unwrap()).into_owned();
        assert!(!text.contains(secret), "password in {}", p.display());
    }
}

#[test]
fn wrong_password_and_global_only_session_set_are_clear_errors() {
    let my = MariaDb::shared();
    let db = my.create_db("bad");
    let dir = tempdir();
    let uri = my.uri(&db).replace(my.password(), "wrongpw77");
    let out = run(
        dir.path(),
        &Argv::run("commit").target(&uri).ops(1).out("w").args(),
    );
    let printed = all_output(&out);
    assert!(!out.status.success());
    assert!(printed.contains("Access denied"), "{printed}");
    assert!(!printed.contains("wrongpw77"), "{printed}");
    let out = run(
        dir.path(),
        &Argv::run("commit")
            .target(my.uri(&db))
            .set("innodb_flush_log_at_trx_commit=2")
            .ops(1)
            .out("g")
            .args(),
    );
    let printed = all_output(&out);
    assert!(!out.status.success());
    assert!(
        printed.contains("--set innodb_flush_log_at_trx_commit=2"),
        "{printed}"
    );
    assert!(printed.contains("GLOBAL"), "{printed}");
}

#[test]
fn workloads_not_yet_ported_refuse_mariadb_by_name() {
    let my = MariaDb::shared();
    let db = my.create_db("nyet");
    let dir = tempdir();
    let out = run(
        dir.path(),
        &Argv::run("events")
            .target(my.uri(&db))
            .duration("1s")
            .out("e")
            .args(),
    );
    let printed = all_output(&out);
    assert!(!out.status.success());
    assert!(
        printed.contains("does not run on MariaDB/MySQL targets yet"),
        "{printed}"
    );
}

fn setup_notes(run: &Path) -> Vec<String> {
    let m = manifest(run);
    m["workload"]["params"]["setup"]
        .as_array()
        .unwrap_or_else(|| panic!("setup notes in {m}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// lookup on MariaDB: the table filled once by LOAD DATA LOCAL INFILE (every row, every pad of
/// the asked length), reused by the next run, each lookup an event finding its one row; a cold
/// run says what it could and could not empty.
#[test]
fn lookup_on_mariadb_fills_by_load_data_and_reuses_the_table() {
    let my = MariaDb::shared();
    let db = my.create_db("lookup");
    let dir = tempdir();
    let lookup = |out: &str, cache: &str| {
        let o = run(
            dir.path(),
            &Argv::run("lookup")
                .target(my.uri(&db))
                .rows(20000)
                .opt("--row-bytes", 100)
                .opt("--cache", cache)
                .sessions(2)
                .ops(300)
                .quiet()
                .out(out)
                .args(),
        );
        assert!(o.status.success(), "{}", all_output(&o));
        join(dir.path(), out)
    };
    let first = lookup("a", "warm");
    let r = report_json(dir.path(), &first);
    assert_eq!(
        event(&r, "lookup")["count"],
        300,
        "--ops is the run's total"
    );
    assert!(r["errors"].as_object().is_none_or(|e| e.is_empty()), "{r}");
    let notes = setup_notes(&first);
    assert!(
        notes[0].contains("filled by LOAD DATA LOCAL INFILE"),
        "{notes:?}"
    );
    assert!(
        notes.iter().any(|n| n.contains("InnoDB buffer pool")),
        "{notes:?}"
    );
    assert_eq!(
        my.query(
            &db,
            "SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id), MIN(LENGTH(pad)), \
             MAX(LENGTH(pad)) FROM dbscope_lookup"
        ),
        "20000\t20000\t1\t20000\t92\t92"
    );
    assert_eq!(
        manifest(&first)["target"]["settings_effective"]["innodb_flush_method"]
            .as_str()
            .map(|s| !s.is_empty()),
        Some(true)
    );
    let cold = lookup("b", "cold");
    let notes = setup_notes(&cold);
    assert!(notes[0].contains("reused"), "{notes:?}");
    assert!(
        notes
            .iter()
            .any(|n| n.contains("InnoDB buffer pool: NOT emptied")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("OS page cache of dbscope_lookup")),
        "{notes:?}"
    );
    let r = report_json(dir.path(), &cold);
    assert_eq!(
        event(&r, "lookup")["count"],
        300,
        "--ops is the run's total"
    );
}

/// bulkload on MariaDB: every row loaded in parallel by LOAD DATA LOCAL INFILE, the GROUP BY's
/// answer checked to the last count (as on the other targets), into a logged InnoDB table and a
/// temporary one; unlogged is refused with the reason.
#[test]
fn bulkload_on_mariadb_loads_every_row_and_checks_the_groups() {
    let my = MariaDb::shared();
    let db = my.create_db("bulk");
    let dir = tempdir();
    for (into, rows, groups, sessions, repeat) in [
        ("logged", 30011u64, 4100u64, 3u64, 1u64),
        ("temp", 5000, 7, 1, 2),
    ] {
        let out = format!("b-{into}");
        let o = run(
            dir.path(),
            &Argv::run("bulkload")
                .target(my.uri(&db))
                .rows(rows)
                .opt("--groups", groups)
                .opt("--into", into)
                .opt("--repeat", repeat)
                .sessions(sessions)
                .quiet()
                .out(&out)
                .args(),
        );
        assert!(o.status.success(), "{}", all_output(&o));
        let r = report_json(dir.path(), &join(dir.path(), &out));
        assert_eq!(event(&r, "load")["count"], sessions * repeat);
        assert_eq!(event(&r, "groupby2")["count"], repeat);
        let b = &r["bulkload"];
        assert_eq!(b["rows_loaded"], rows, "{b}");
        assert_eq!(
            b["check"],
            format!("ok: {} groups, counts sum to {rows}", groups.min(rows)),
            "{b}"
        );
        assert_eq!(
            b["steps"].as_array().unwrap().len() as u64,
            3 * repeat,
            "{b}"
        );
        if into == "logged" {
            assert_eq!(
                my.query(
                    &db,
                    "SELECT COUNT(*), COUNT(DISTINCT id), MIN(id), MAX(id), COUNT(DISTINCT col) \
                     FROM dbscope_bulkload"
                ),
                "30011\t30011\t1\t30011\t4100"
            );
        }
    }
    let o = run(
        dir.path(),
        &Argv::run("bulkload")
            .target(my.uri(&db))
            .rows(10)
            .opt("--into", "unlogged")
            .out("u")
            .args(),
    );
    let printed = all_output(&o);
    assert!(!o.status.success());
    assert!(
        printed.contains("InnoDB has no unlogged tables"),
        "{printed}"
    );
}

/// Two rows updated in opposite orders by four sessions: InnoDB deadlocks (1213). With enough
/// tries every transaction commits in the end, the retries counted; with one try the failures
/// are counted by the server's error number and nothing is lost from the counts.
const DEADLOCK: &str = "\\set a random(1, 2)
\\set b 3 - :a
BEGIN;
UPDATE hot SET v = v + 1 WHERE id = :a;
\\sleep 2 ms
UPDATE hot SET v = v + 1 WHERE id = :b;
COMMIT;
";

#[test]
fn script_on_mariadb_retries_deadlocks_and_counts_them_by_error_number() {
    let my = MariaDb::shared();
    let dir = tempdir();
    let f = dir.path().join("deadlock.sql");
    std::fs::write(&f, DEADLOCK).unwrap();
    for (tries, mode, out) in [("100", "prepared", "retried"), ("1", "extended", "once")] {
        let db = my.create_db("deadlock");
        my.query(
            &db,
            "CREATE TABLE hot(id INT PRIMARY KEY, v INT NOT NULL) ENGINE=InnoDB; \
             INSERT INTO hot VALUES (1, 0), (2, 0)",
        );
        let o = run(
            dir.path(),
            &[
                "run",
                "script",
                "-f",
                s(&f),
                "-M",
                mode,
                "-c",
                "4",
                "--ops",
                "40",
                "--max-tries",
                tries,
                "--target",
                &my.uri(&db),
                "--out",
                out,
                "-q",
            ],
        );
        let r = report_json(dir.path(), &join(dir.path(), out));
        let p = &r["pgbench"];
        let n = |v: &serde_json::Value| v.as_u64().unwrap_or_else(|| panic!("a count: {v}"));
        let processed = n(&p["processed"]);
        let failed: u64 = p["failed"].as_object().unwrap().values().map(n).sum();
        assert_eq!(
            processed + failed,
            160,
            "every transaction counted once: {p}"
        );
        let v: u64 = my.query(&db, "SELECT SUM(v) FROM hot").parse().unwrap();
        assert_eq!(
            v,
            2 * processed,
            "the rows hold the committed transactions: {p}"
        );
        if tries == "100" {
            assert!(o.status.success(), "{}", all_output(&o));
            assert_eq!(failed, 0, "{p}");
            assert!(
                n(&p["retried"]) > 0 && n(&p["retries"]) >= n(&p["retried"]),
                "deadlocks retried: {p}"
            );
        } else {
            assert!(
                n(&p["failed"]["mysql:1213"]) > 0,
                "failures by error number: {p}"
            );
            assert_eq!(n(&p["retried"]), 0, "{p}");
            assert_eq!(p["failed"].as_object().unwrap().len(), 1, "{p}");
        }
    }
}

/// A script in MariaDB's dialect in each query mode: variables bound as parameters (or
/// substituted), `\gset` reading a row back, the rows written checked on the server.
#[test]
fn script_on_mariadb_binds_variables_and_reads_rows_back_in_every_mode() {
    let my = MariaDb::shared();
    let dir = tempdir();
    let f = dir.path().join("log.sql");
    std::fs::write(
        &f,
        "\\set k random(1, 1000)\nSELECT :k + 1 AS k1, :k * 2 AS k2 \\gset got_\n\
         INSERT INTO log(k, k1, k2) VALUES (:k, :got_k1, :got_k2);\n",
    )
    .unwrap();
    for mode in ["simple", "extended", "prepared"] {
        let db = my.create_db("script");
        my.query(&db, "CREATE TABLE log(k INT, k1 INT, k2 INT)");
        let out = format!("s-{mode}");
        let o = run(
            dir.path(),
            &[
                "run",
                "script",
                "-f",
                s(&f),
                "-M",
                mode,
                "-c",
                "2",
                "--ops",
                "25",
                "--target",
                &my.uri(&db),
                "--out",
                &out,
                "-q",
            ],
        );
        assert!(o.status.success(), "{mode}: {}", all_output(&o));
        assert_eq!(
            my.query(
                &db,
                "SELECT COUNT(*), SUM(k1 = k + 1), SUM(k2 = 2 * k) FROM log"
            ),
            "50\t50\t50",
            "{mode}"
        );
    }
}
