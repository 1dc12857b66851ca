//! The commit workload on a real PostgreSQL server (a throwaway cluster from `common::pg`).

use std::time::Duration;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::pg::PgCluster;
use crate::crash::{sigkill, start_and_wait};

fn all_output(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Everything dbscope wrote for a run, as one string, to look for secrets.
fn everything_written(run: &std::path::Path) -> String {
    let mut all = String::new();
    for e in std::fs::read_dir(run).unwrap() {
        let p = e.unwrap().path();
        all.push_str(&String::from_utf8_lossy(&std::fs::read(&p).unwrap()));
    }
    all
}

#[test]
fn commit_run_on_postgres() {
    let pg = PgCluster::shared();
    let db = pg.create_db("commit");
    let dir = tempdir();
    let uri = pg.uri(&db);
    let out = run(
        dir.path(),
        &Argv::run("commit")
            .target(&uri)
            .sessions(4)
            .ops(100)
            .set("synchronous_commit=off")
            .out("p")
            .args(),
    );
    let printed = all_output(&out);
    assert!(out.status.success(), "{printed}");
    let run_dir = join(dir.path(), "p");
    let m = manifest(&run_dir);
    assert_eq!(m["outcome"], "complete");
    let t = pg_target(&m);
    assert_eq!(t["settings_effective"]["synchronous_commit"], "off");
    for k in [
        "wal_sync_method",
        "fsync",
        "commit_delay",
        "wal_level",
        "shared_buffers",
    ] {
        assert!(t["settings_effective"][k].is_string(), "{k} read back: {t}");
    }
    let r = report_json(dir.path(), &run_dir);
    for name in ["update", "commit"] {
        let e = event(&r, name);
        assert_eq!(e["count"], 400, "{name}");
        assert_summary_sane(e);
    }
    assert_eq!(pg.query(&db, "SELECT SUM(v) FROM dbscope_commit"), "400");
    assert_eq!(pg.query(&db, "SELECT COUNT(*) FROM dbscope_commit"), "4");

    // The password appears nowhere: not in output, manifest, events, or report.
    let secret = pg.password();
    assert!(uri.contains(secret), "the test URI carries the password");
    assert!(!printed.contains(secret), "password printed: {printed}");
    assert!(
        !everything_written(&run_dir).contains(secret),
        "password written to the run directory"
    );
    let text = ok(dir.path(), &["report", "p"]);
    assert!(!text.contains(secret));
    assert!(
        m["command_line"].to_string().contains(":***@"),
        "{}",
        m["command_line"]
    );
}

#[test]
fn database_url_is_used_when_no_target_is_given() {
    let pg = PgCluster::shared();
    let db = pg.create_db("dburl");
    let dir = tempdir();
    let out = dbscope(dir.path())
        .env("DATABASE_URL", pg.uri(&db))
        .args(["run", "commit", "--ops", "3", "--out", "u", "-q"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", all_output(&out));
    assert_eq!(
        manifest(&join(dir.path(), "u"))["target"]["kind"],
        "postgres"
    );
    assert_eq!(pg.query(&db, "SELECT SUM(v) FROM dbscope_commit"), "3");
}

#[test]
fn unknown_setting_passes_on_postgres_error() {
    let pg = PgCluster::shared();
    let db = pg.create_db("badset");
    let dir = tempdir();
    fails(
        dir.path(),
        &Argv::run("commit")
            .target(pg.uri(&db))
            .set("synchronus_commit=off")
            .ops(1)
            .args(),
        2,
        &["synchronus_commit", "unrecognized configuration parameter"],
    );
}

#[test]
fn wrong_password_is_refused_without_showing_it() {
    let pg = PgCluster::shared();
    let dir = tempdir();
    let uri = pg.uri_with_password("postgres", "not-the-password-42");
    let e = fails(
        dir.path(),
        &Argv::run("commit").target(&uri).ops(1).args(),
        4,
        &["password authentication failed"],
    );
    assert!(!e.contains("not-the-password-42"), "{e}");
}

#[test]
fn unreachable_server_is_bounded_and_named() {
    let dir = tempdir();
    let nowhere = tempdir();
    let uri = format!("postgres://u:pw@/db?host={}&port=5999", s(nowhere.path()));
    let start = std::time::Instant::now();
    fails(
        dir.path(),
        &Argv::run("commit").target(&uri).ops(1).args(),
        4,
        &["cannot connect to PostgreSQL", s(nowhere.path())],
    );
    assert!(start.elapsed() < Duration::from_secs(30));
    // TCP: nothing listens on port 1 of the loopback address.
    fails(
        dir.path(),
        &Argv::run("commit")
            .target("postgres://u@127.0.0.1:1/db?connect_timeout=3")
            .ops(1)
            .args(),
        4,
        &["cannot connect to PostgreSQL at postgres://u@127.0.0.1:1/db"],
    );
}

#[test]
fn killed_backends_are_recorded_and_the_run_goes_on() {
    killed_backends_on(&["--threads", "2"], "killed");
}

/// The same with both sessions on one client thread: a session reconnects inside the thread it
/// shares, and the other keeps going meanwhile.
#[test]
fn killed_backends_of_multiplexed_sessions_reconnect() {
    killed_backends_on(&["--threads", "1"], "killedmux");
}

fn killed_backends_on(threads: &[&str], name: &str) {
    let pg = PgCluster::shared();
    let db = pg.create_db(name);
    let dir = tempdir();
    let run_dir = join(dir.path(), "k");
    let uri = pg.uri(&db);
    let mut args = vec![
        "run",
        "commit",
        "--target",
        &uri,
        "--sessions",
        "2",
        "--duration",
        "3s",
        "--out",
        "k",
        "-q",
    ];
    args.extend_from_slice(threads);
    let child = start_and_wait(dir.path(), &args, &run_dir);
    let killed = pg.kill_backends(&db);
    assert!(killed >= 2, "killed {killed} backends");
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "the run survives: {}",
        all_output(&out)
    );
    let m = manifest(&run_dir);
    assert_eq!(m["outcome"], "complete");
    let r = report_json(dir.path(), &run_dir);
    let errors: u64 = ["update", "commit"]
        .iter()
        .map(|n| event(&r, n)["errors"].as_u64().unwrap())
        .sum();
    assert!(
        errors >= 1,
        "the killed sessions' failures are recorded: {r}"
    );
    let classes = format!(
        "{}{}",
        event(&r, "update")["error_classes"],
        event(&r, "commit")["error_classes"]
    );
    assert!(
        classes.contains("pg:57P01") || classes.contains("pg:connection"),
        "{classes}"
    );
    // Sessions reconnected: commits kept coming after the kill.
    let committed: i64 = pg
        .query(&db, "SELECT SUM(v) FROM dbscope_commit")
        .parse()
        .unwrap();
    let recorded = event(&r, "commit")["count"].as_i64().unwrap();
    // A COMMIT cut off by the kill may or may not have reached the WAL: it is in doubt, recorded as
    // an error, and may be in the table.
    let in_doubt = event(&r, "commit")["errors"].as_i64().unwrap();
    assert!(
        committed >= recorded && committed <= recorded + in_doubt,
        "recorded {recorded} ok + {in_doubt} failed commits; the database has {committed}"
    );
}

#[test]
fn max_errors_stops_the_run_as_failed() {
    let pg = PgCluster::shared();
    let db = pg.create_db("maxerr");
    let dir = tempdir();
    let run_dir = join(dir.path(), "f");
    let child = start_and_wait(
        dir.path(),
        &Argv::run("commit")
            .target(pg.uri(&db))
            .duration("20s")
            .opt("--max-errors", 0)
            .out("f")
            .quiet()
            .args(),
        &run_dir,
    );
    pg.kill_backends(&db);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", all_output(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("run failed") && stderr.contains("--max-errors 0"),
        "{stderr}"
    );
    let m = manifest(&run_dir);
    assert_eq!(m["outcome"], "failed");
    let text = ok(dir.path(), &["report", "f"]);
    assert!(text.starts_with("FAILED:"), "{text}");
}

#[test]
fn sigkill_keeps_complete_blocks_postgres() {
    let pg = PgCluster::shared();
    let db = pg.create_db("sigkill");
    let dir = tempdir();
    let run_dir = join(dir.path(), "s");
    let mut child = start_and_wait(
        dir.path(),
        &Argv::run("commit")
            .target(pg.uri(&db))
            .duration("60s")
            .out("s")
            .args(),
        &run_dir,
    );
    sigkill(&mut child);
    let r = report_json(dir.path(), &run_dir);
    assert!(r["incomplete"].is_string(), "{r}");
    let recorded = event(&r, "commit")["count"].as_i64().unwrap();
    // Give the server a moment to finish the killed client's last transaction.
    std::thread::sleep(Duration::from_millis(300));
    let committed: i64 = pg
        .query(&db, "SELECT SUM(v) FROM dbscope_commit")
        .parse()
        .unwrap();
    assert!(recorded > 0);
    assert!(
        committed >= recorded && committed - recorded <= 4096,
        "recorded {recorded}, committed {committed}: more than one block apart"
    );
}

/// Sessions multiplexed over fewer client threads (`--threads`) do exactly the work of sessions
/// with a thread each, and the run says how they were driven.
#[test]
fn sessions_share_client_threads() {
    let pg = PgCluster::shared();
    let db = pg.create_db("mux");
    let dir = tempdir();
    let uri = pg.uri(&db);
    commit_on_two_shared_threads(dir.path(), &uri);
    assert_eq!(pg.query(&db, "SELECT SUM(v) FROM dbscope_commit"), "1500");
    assert_eq!(
        pg.query(
            &db,
            "SELECT string_agg(v::text, ',' ORDER BY id) FROM dbscope_commit"
        ),
        "300,300,300,300,300"
    );

    // A thread per session: no `threads` in the manifest.
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&uri)
            .sessions(2)
            .opt("--threads", 2)
            .ops(10)
            .out("own")
            .quiet()
            .args(),
    );
    assert!(manifest(&join(dir.path(), "own"))["runner"]
        .get("threads")
        .is_none());
}

#[test]
fn threads_are_refused_where_sessions_cannot_share_them() {
    let dir = tempdir();
    let target = format!("sqlite:{}", dir.path().join("t.db").display());
    let err = fails(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .sessions(3)
            .opt("--threads", 1)
            .ops(5)
            .quiet()
            .args(),
        2,
        &["--threads 1: this target runs every session in a thread of its own"],
    );
    assert!(!err.contains("panicked"), "{err}");
    // Without --threads, SQLite sessions get a thread each, whatever the CPUs.
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .sessions(3)
            .ops(5)
            .out("s")
            .quiet()
            .args(),
    );
    assert!(manifest(&join(dir.path(), "s"))["runner"]
        .get("threads")
        .is_none());
}
