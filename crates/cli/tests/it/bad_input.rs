//! Bad input: one clear line, exit code 2, no panic, no secrets.

use crate::cli::*;
use crate::common::argv::Argv;

#[test]
fn unknown_target_scheme() {
    let dir = tempdir();
    let e = fails(
        dir.path(),
        &Argv::run("commit")
            .target("oracle://root:topsecret@h/db")
            .ops(1)
            .args(),
        2,
        &["unknown target \"oracle\""],
    );
    assert!(!e.contains("topsecret"));
    assert!(
        !join(dir.path(), "runs").exists()
            || std::fs::read_dir(join(dir.path(), "runs")).unwrap().count() == 0
    );
}

#[test]
fn malformed_mysql_uri() {
    let dir = tempdir();
    let e = fails(
        dir.path(),
        &Argv::run("commit")
            .target("mysql://u:topsecret@host:port/db")
            .ops(1)
            .args(),
        2,
        &["MariaDB/MySQL URI", "invalid port \"port\""],
    );
    assert!(!e.contains("topsecret"), "{e}");
}

#[test]
fn malformed_uri() {
    let dir = tempdir();
    let e = fails(
        dir.path(),
        &Argv::run("commit")
            .target("postgres://u:topsecret@host:port/db")
            .ops(1)
            .args(),
        2,
        &[
            "PostgreSQL connection string",
            "invalid integer value \"port\" for connection option \"port\"",
        ],
    );
    assert!(!e.contains("topsecret"), "{e}");
}

#[test]
fn zero_sessions() {
    let dir = tempdir();
    fails(
        dir.path(),
        &Argv::run("commit").sessions(0).ops(1).args(),
        2,
        &["--sessions must be at least 1"],
    );
    assert!(
        !join(dir.path(), "runs").exists()
            || std::fs::read_dir(join(dir.path(), "runs")).unwrap().count() == 0
    );
}

#[test]
fn unknown_sqlite_pragma() {
    let dir = tempdir();
    fails(
        dir.path(),
        &Argv::run("commit").set("jurnal_mode=wal").ops(1).args(),
        2,
        &["no pragma named \"jurnal_mode\""],
    );
}

#[test]
fn bad_durations_and_keys() {
    let dir = tempdir();
    let out = run(
        dir.path(),
        &Argv::run("commit").duration("10parsecs").args(),
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown unit"));
    fails(
        dir.path(),
        &Argv::run("commit")
            .opt("--keys", "some")
            .ops(1)
            .target("null")
            .args(),
        2,
        &["--keys \"some\""],
    );
}

#[test]
fn report_on_a_directory_that_is_not_a_run() {
    let dir = tempdir();
    fails(
        dir.path(),
        &["report", "."],
        3,
        &["not a dbscope run directory"],
    );
    fails(dir.path(), &["report", "missing"], 3, &["missing"]);
    fails(
        dir.path(),
        &["export", ".", "--format", "csv"],
        3,
        &["not a dbscope run directory"],
    );
}

#[test]
fn newer_format_version_is_refused() {
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .ops(10)
            .out("r")
            .quiet()
            .args(),
    );
    let p = join(dir.path(), "r/manifest.json");
    let text = std::fs::read_to_string(&p)
        .unwrap()
        .replace("\"format_version\": \"2.0\"", "\"format_version\": \"3.0\"");
    std::fs::write(&p, text).unwrap();
    fails(
        dir.path(),
        &["report", "r"],
        3,
        &["format_version 3.0 is newer", "upgrade dbscope"],
    );
}

#[test]
fn damaged_manifest_names_the_line() {
    let dir = tempdir();
    std::fs::create_dir(join(dir.path(), "r")).unwrap();
    std::fs::write(
        join(dir.path(), "r/manifest.json"),
        "{\n \"format_version\": \"1.0\",\n oops\n",
    )
    .unwrap();
    fails(
        dir.path(),
        &["report", "r"],
        3,
        &["manifest.json", "line 3"],
    );
}

#[test]
fn run_refuses_to_overwrite_a_run() {
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .ops(10)
            .out("r")
            .quiet()
            .args(),
    );
    fails(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .ops(10)
            .out("r")
            .quiet()
            .args(),
        2,
        &["already holds a run"],
    );
}

/// Issue 34 item 13: an option of another workload is refused, naming the workloads it applies
/// to, before anything is set up (it was silently ignored: `run tpch-q1 --cache cold`, `run
/// commit --rows N`); usage errors exit 2.
#[test]
fn issue_34_options_that_do_not_apply_to_the_workload_are_refused() {
    let dir = tempdir();
    let d = dir.path();
    let cases: [(Argv, &str); 12] = [
        (
            Argv::run("tpch-q1").opt("--dist", "zipf:1.5"),
            "--dist applies to the commit, lookup and events workloads, not tpch-q1",
        ),
        (
            Argv::run("lookup").opt("--max-tries", "3"),
            "--max-tries applies to the script and tpcc workloads, not lookup",
        ),
        (
            Argv::run("tpch-q1").opt("--cache", "cold"),
            "--cache applies to the lookup and scan workloads, not tpch-q1",
        ),
        (
            Argv::run("commit").rows(5),
            "--rows applies to the lookup, bulkload and scan workloads, not commit",
        ),
        (
            Argv::run("commit").opt("--restart-cmd", "true"),
            "--restart-cmd applies to the lookup workload only, not commit",
        ),
        (
            Argv::run("lookup").opt("--keys", "shared:10"),
            "--keys applies to the commit workload only, not lookup",
        ),
        (
            Argv::run("bulkload").fresh(),
            "--fresh applies to the commit, lookup, events, scan and tpcc workloads, not bulkload",
        ),
        (
            Argv::run("tpch-q1").opt("--table", "t"),
            "--table applies to the commit, lookup, bulkload and scan workloads, not tpch-q1",
        ),
        (
            Argv::run("lookup").strategy("row"),
            "--strategy applies to the events workload only, not lookup",
        ),
        (
            Argv::run("events").opt("--into", "logged"),
            "--into applies to the bulkload workload only, not events",
        ),
        (
            Argv::run("bulkload").opt("--warmup", "1s"),
            "--warmup applies to the commit, tpch-q1, lookup, events, script and scan workloads, not bulkload",
        ),
        (
            Argv::run("lookup").opt("--restart-timeout", "5s"),
            "--restart-timeout is the time --restart-cmd may take: give both",
        ),
    ];
    for (argv, msg) in cases {
        let out = join(d, "never");
        fails(d, &argv.target("null").out(out.display()).args(), 2, &[msg]);
        assert!(!out.exists(), "{msg}: no run directory");
    }
    // Given to the workload they belong to, the same options pass the check (to the target's).
    fails(
        d,
        &Argv::run("lookup")
            .rows(10)
            .opt("--cache", "cold")
            .opt("--restart-cmd", "true")
            .target("null")
            .args(),
        2,
        &["--restart-cmd", "needs a PostgreSQL target"],
    );
}

/// Without the `hub` build feature `dbscope query` is still there and says how to get it.
#[cfg(not(feature = "hub"))]
#[test]
fn query_without_the_hub_feature_says_how_to_build_it() {
    let dir = tempdir();
    fails(
        dir.path(),
        &["query", "SELECT 1", "--source", "t=file:x.parquet"],
        2,
        &[
            "built without the data hub",
            "--features hub",
            "docs/hub.md",
        ],
    );
}
