//! The MariaDB/MySQL target (issue 30) on a real MariaDB server (`common::mariadb`).

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
        &Argv::run("lookup")
            .target(my.uri(&db))
            .ops(1)
            .out("l")
            .args(),
    );
    let printed = all_output(&out);
    assert!(!out.status.success());
    assert!(
        printed.contains("does not run on MariaDB/MySQL targets yet"),
        "{printed}"
    );
}
