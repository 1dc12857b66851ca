//! The `script` workload (issue 28): pgbench scripts run unchanged on a real PostgreSQL and on
//! SQLite, pgbench's tables made as `pgbench -i` makes them, the TPC-B invariant afterwards,
//! serialization failures retried (or counted by SQLSTATE), and bad scripts refused with file,
//! line and column.

use std::path::Path;

use serde_json::Value;

use crate::cli::*;
use crate::common::pg::PgCluster;

fn figures(r: &Value) -> &Value {
    let p = &r["pgbench"];
    assert!(
        p.is_object(),
        "a script run's report has pgbench's figures: {r}"
    );
    p
}

fn n(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("a count: {v}"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    s(&p).to_string()
}

/// `--init tpcb` makes the tables `pgbench -i` makes (columns, types, keys, rows), and a
/// tpcb-like run keeps TPC-B's invariant: every balance sum equals the sum of the history's
/// deltas, and the history holds one row per transaction dbscope counted.
#[test]
fn tpcb_like_on_postgres_keeps_the_invariant_and_matches_pgbench_init() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let ours = pg.create_db("script_tpcb");
    let theirs = pg.create_db("script_pgbench");
    let uri = pg.uri(&ours);
    let out = ok(
        dir.path(),
        &[
            "run",
            "script",
            "-b",
            "tpcb-like",
            "--init",
            "tpcb",
            "--scale",
            "2",
            "-c",
            "4",
            "-j",
            "2",
            "--ops",
            "150",
            "-M",
            "prepared",
            "--target",
            &uri,
            "--out",
            "r",
            "-q",
        ],
    );
    assert!(out.trim().ends_with('r'), "{out}");
    let sock = pg.socket_dir().display().to_string();
    let port = pg.port().to_string();
    pg.pgbench(&["-i", "-s", "2", "-q", "-h", &sock, "-p", &port, &theirs]);
    let shape = "SELECT table_name, column_name, data_type, coalesce(character_maximum_length, 0), is_nullable \
                 FROM information_schema.columns WHERE table_name LIKE 'pgbench_%' ORDER BY 1, ordinal_position";
    assert_eq!(pg.query(&ours, shape), pg.query(&theirs, shape));
    let keys = "SELECT conrelid::regclass, pg_get_constraintdef(oid) FROM pg_constraint \
                WHERE conrelid::regclass::text LIKE 'pgbench_%' ORDER BY 1";
    assert_eq!(pg.query(&ours, keys), pg.query(&theirs, keys));
    let contents = "SELECT (SELECT count(*) || ',' || sum(bid) || ',' || max(length(filler)) FROM pgbench_accounts), \
                    (SELECT count(*) || ',' || sum(bid) FROM pgbench_tellers), (SELECT count(*) FROM pgbench_branches)";
    // Our accounts were updated by the run; the keys, branches and fillers were not.
    assert_eq!(pg.query(&ours, contents), pg.query(&theirs, contents));

    let r = report_json(dir.path(), &dir.path().join("r"));
    let p = figures(&r);
    assert_eq!(n(&p["processed"]), 600, "4 clients × 150: {p}");
    assert_eq!(p["failed"], serde_json::json!({}), "{p}");
    assert_eq!(p["scale"], 2);
    assert_eq!(p["mode"], "prepared");
    let sums = pg.query(
        &ours,
        "SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(bbalance) FROM pgbench_branches), \
         (SELECT sum(tbalance) FROM pgbench_tellers), (SELECT sum(delta) FROM pgbench_history), \
         (SELECT count(*) FROM pgbench_history)",
    );
    let v: Vec<&str> = sums.split('|').collect();
    assert_eq!(v[0], v[1], "sum(abalance) = sum(bbalance): {sums}");
    assert_eq!(v[1], v[2], "sum(bbalance) = sum(tbalance): {sums}");
    assert_eq!(v[2], v[3], "sum(tbalance) = sum(delta): {sums}");
    assert_eq!(
        v[4], "600",
        "one history row per committed transaction: {sums}"
    );
    // Every command is an event of its own, named after script and line.
    let names: Vec<&str> = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"tpcb-like"), "{names:?}");
    let update = names
        .iter()
        .find(|n| n.starts_with("tpcb-like:") && n.contains("UPDATE pgbench_accounts"))
        .unwrap_or_else(|| panic!("an event per command: {names:?}"));
    assert_eq!(event(&r, update)["count"], 600);
    assert_eq!(event(&r, "tpcb-like")["count"], 600);
    // The text report prints pgbench's lines.
    let text = ok(dir.path(), &["report", "r"]);
    for line in [
        "transaction type: tpcb-like",
        "number of transactions actually processed: 600",
        "number of failed transactions: 0 (0.000%)",
        "latency average = ",
        "tps = ",
    ] {
        assert!(text.contains(line), "{line:?} in:\n{text}");
    }
}

const CONFLICT: &str = "\\set id random(1, 2)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT v FROM hot WHERE id = :id;
SELECT pg_sleep(0.002);
UPDATE hot SET v = v + 1 WHERE id = :id;
END;
";

/// Two rows updated by four sessions under REPEATABLE READ: serialization failures. With enough
/// tries every transaction commits in the end and the retries are counted; with one try the
/// failures are counted by SQLSTATE and nothing is lost from the counts.
#[test]
fn serialization_failures_are_retried_or_counted_by_sqlstate() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let f = write(dir.path(), "conflict.sql", CONFLICT);
    for (tries, out) in [("100", "retried"), ("1", "once")] {
        let db = pg.create_db("script_conflict");
        pg.query(
            &db,
            "CREATE TABLE hot(id int PRIMARY KEY, v int NOT NULL); INSERT INTO hot VALUES (1, 0), (2, 0)",
        );
        ok(
            dir.path(),
            &[
                "run",
                "script",
                "-f",
                &f,
                "-c",
                "4",
                "--ops",
                "40",
                "--max-tries",
                tries,
                "--target",
                &pg.uri(&db),
                "--out",
                out,
                "-q",
            ],
        );
        let r = report_json(dir.path(), &dir.path().join(out));
        let p = figures(&r);
        let processed = n(&p["processed"]);
        let failed: u64 = p["failed"].as_object().unwrap().values().map(n).sum();
        assert_eq!(
            processed + failed,
            160,
            "every transaction counted once: {p}"
        );
        let v: u64 = pg.query(&db, "SELECT sum(v) FROM hot").parse().unwrap();
        assert_eq!(
            v, processed,
            "the rows hold the committed transactions: {p}"
        );
        if tries == "100" {
            assert_eq!(failed, 0, "{p}");
            assert!(
                n(&p["retried"]) > 0 && n(&p["retries"]) >= n(&p["retried"]),
                "{p}"
            );
        } else {
            assert!(n(&p["failed"]["pg:40001"]) > 0, "failures by SQLSTATE: {p}");
            assert_eq!(n(&p["retried"]), 0, "{p}");
            assert_eq!(p["failed"].as_object().unwrap().len(), 1, "{p}");
        }
    }
}

const META: &str = "\\set k random(1, 10) * :mult
\\set half :k / 2
SELECT :k AS k, :half AS h \\gset got_
\\if :got_k = :k AND :got_h = :half
INSERT INTO log(what, v) VALUES ('ok', :got_k);
\\elif :got_k > 0
INSERT INTO log(what, v) VALUES ('wrong', :got_k);
\\else
INSERT INTO log(what, v) VALUES ('never', 0);
\\endif
SELECT count(*) AS n FROM log \\aset
\\setshell three echo 3
\\shell true
\\sleep 1 ms
\\startpipeline
INSERT INTO log(what, v) VALUES ('pipe', :three);
\\endpipeline
";

/// A script with every kind of meta-command on SQLite: variables, \gset/\aset, \if, \sleep,
/// \setshell/\shell, a pipeline (run one statement after another there), and -D.
#[test]
fn meta_commands_and_variables_on_sqlite() {
    let dir = tempdir();
    let db = format!("sqlite:{}", s(&dir.path().join("s.db")));
    let script = META;
    let f = write(dir.path(), "meta.sql", script);
    // The table first (a script of its own, once).
    let setup = write(
        dir.path(),
        "setup.sql",
        "CREATE TABLE IF NOT EXISTS log(what text, v int);\n",
    );
    ok(
        dir.path(),
        &[
            "run", "script", "-f", &setup, "--ops", "1", "--target", &db, "--out", "setup", "-q",
        ],
    );
    ok(
        dir.path(),
        &[
            "run", "script", "-f", &f, "-M", "extended", "-D", "mult=3", "-c", "2", "--ops", "25",
            "--target", &db, "--out", "meta", "-q",
        ],
    );
    let r = report_json(dir.path(), &dir.path().join("meta"));
    let p = figures(&r);
    assert_eq!(n(&p["processed"]), 50, "{p}");
    let c = rusqlite::Connection::open(dir.path().join("s.db")).unwrap();
    let q = |sql: &str| -> i64 { c.query_row(sql, [], |r| r.get(0)).unwrap() };
    assert_eq!(q("SELECT count(*) FROM log WHERE what = 'ok'"), 50);
    assert_eq!(
        q("SELECT count(*) FROM log WHERE what <> 'ok' AND what <> 'pipe'"),
        0
    );
    assert_eq!(
        q("SELECT count(*) FROM log WHERE what = 'pipe' AND v = 3"),
        50
    );
    // -D mult=3: every k is a multiple of 3 in 3..=30.
    assert_eq!(
        q("SELECT count(*) FROM log WHERE what = 'ok' AND (v % 3 <> 0 OR v < 3 OR v > 30)"),
        0
    );
    // The same command replays the same random values (seeded); another seed draws others.
    let sequence = |file: &str, seed: &str| {
        let db = format!("sqlite:{}", s(&dir.path().join(file)));
        ok(
            dir.path(),
            &[
                "run",
                "script",
                "-f",
                &setup,
                "--ops",
                "1",
                "--target",
                &db,
                "--out",
                &format!("{file}-setup"),
                "-q",
            ],
        );
        ok(
            dir.path(),
            &[
                "run",
                "script",
                "-f",
                &f,
                "-M",
                "prepared",
                "-D",
                "mult=1",
                "--ops",
                "30",
                "--seed",
                seed,
                "--target",
                &db,
                "--out",
                &format!("{file}-run"),
                "-q",
            ],
        );
        let c = rusqlite::Connection::open(dir.path().join(file)).unwrap();
        c.query_row(
            "SELECT group_concat(v) FROM (SELECT v FROM log WHERE what = 'ok' ORDER BY rowid)",
            [],
            |r| r.get::<_, String>(0),
        )
        .unwrap()
    };
    let (a, b, other) = (
        sequence("a.db", "7"),
        sequence("b.db", "7"),
        sequence("c.db", "8"),
    );
    assert_eq!(a, b, "same seed, same values");
    assert_ne!(a, other, "another seed, other values");
}

/// The same script on a real PostgreSQL: pipelines really pipelined (extended and prepared),
/// \gset/\aset from the server's answers, and the same rows as on SQLite.
#[test]
fn meta_commands_and_variables_on_postgres() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let db = pg.create_db("script_meta");
    pg.query(&db, "CREATE TABLE log(what text, v int)");
    let f = write(dir.path(), "meta.sql", META);
    for (mode, out) in [("extended", "e"), ("prepared", "p")] {
        ok(
            dir.path(),
            &[
                "run",
                "script",
                "-f",
                &f,
                "-M",
                mode,
                "-D",
                "mult=3",
                "-c",
                "2",
                "--ops",
                "25",
                "--target",
                &pg.uri(&db),
                "--out",
                out,
                "-q",
            ],
        );
        let r = report_json(dir.path(), &dir.path().join(out));
        assert_eq!(n(&figures(&r)["processed"]), 50, "{mode}");
    }
    assert_eq!(
        pg.query(&db, "SELECT count(*) FROM log WHERE what = 'ok'"),
        "100"
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT count(*) FROM log WHERE what NOT IN ('ok', 'pipe')"
        ),
        "0"
    );
    assert_eq!(
        pg.query(
            &db,
            "SELECT count(*) FROM log WHERE what = 'pipe' AND v = 3"
        ),
        "100"
    );
    // The pipeline's end is an event of its own; its statements were queued.
    let r = report_json(dir.path(), &dir.path().join("p"));
    let end = r["events"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"].as_str().unwrap().contains("\\endpipeline"))
        .unwrap_or_else(|| panic!("an \\endpipeline event: {r}"));
    assert_eq!(end["count"], 50);
    // Simple mode refuses the pipeline, as pgbench does.
    fails(
        dir.path(),
        &[
            "run",
            "script",
            "-f",
            &f,
            "--ops",
            "1",
            "--target",
            &pg.uri(&db),
            "-q",
        ],
        2,
        &["starts a pipeline"],
    );
}

/// Bad scripts: pgbench-quality errors with file, line and column, exit 3 (bad input); a bad
/// weight is a usage error (exit 2).
#[test]
fn bad_scripts_are_refused_with_file_line_and_column() {
    let dir = tempdir();
    let db = format!("sqlite:{}", s(&dir.path().join("b.db")));
    let cases = [
        (
            "unknown.sql",
            "SELECT 1;\n\\frobnicate x\n",
            "unknown.sql:2:",
        ),
        ("unbalanced.sql", "\\if 1\nSELECT 1;\n", "unbalanced.sql:"),
        ("expr.sql", "\\set x 1 + * 2\n", "expr.sql:1:"),
        ("empty.sql", "-- nothing here\n\n", "empty.sql"),
    ];
    for (name, text, needle) in cases {
        let f = write(dir.path(), name, text);
        let out = run(
            dir.path(),
            &[
                "run", "script", "-f", &f, "--ops", "1", "--target", &db, "-q",
            ],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}: {err}");
        assert!(err.contains(needle), "{name}: {needle:?} in {err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    let f = write(dir.path(), "ok.sql", "SELECT 1;\n");
    fails(
        dir.path(),
        &[
            "run",
            "script",
            "-f",
            &format!("{f}@x"),
            "--ops",
            "1",
            "--target",
            &db,
            "-q",
        ],
        2,
        &["@x"],
    );
    // A pipeline needs the extended protocol, as in pgbench.
    let f = write(
        dir.path(),
        "pipe.sql",
        "\\startpipeline\nSELECT 1;\n\\endpipeline\n",
    );
    fails(
        dir.path(),
        &[
            "run", "script", "-f", &f, "--ops", "1", "--target", &db, "-q",
        ],
        2,
        &[
            "-M/--protocol simple",
            "pipe.sql:1 starts a pipeline",
            "-M/--protocol extended or prepared",
        ],
    );
    // Script options on another workload are refused.
    fails(
        dir.path(),
        &[
            "run",
            "commit",
            "-b",
            "tpcb-like",
            "--ops",
            "1",
            "--target",
            &db,
            "-q",
        ],
        2,
        &["-b/--builtin applies to the script workload only, not commit"],
    );
}
