//! The `lookup` workload (issue 15, part 1) on real SQLite files and a real PostgreSQL server:
//! filled once and reused, every lookup an event, placement on a directory, cache state recorded.

use std::path::Path;

use crate::cli::*;
use crate::common::argv::Argv;
use crate::common::pg::PgCluster;

fn notes(run: &Path) -> Vec<String> {
    let m = manifest(run);
    m["workload"]["params"]["setup"]
        .as_array()
        .unwrap_or_else(|| panic!("setup notes in {m}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn lookup_on_sqlite_fills_once_reuses_and_counts_every_lookup() {
    let dir = tempdir();
    let db = format!("sqlite:{}", s(&dir.path().join("l.db")));
    let args = |out: &'static str, cache: &'static str| {
        vec![
            "run",
            "lookup",
            "--target",
            &db,
            "--rows",
            "3000",
            "--ops",
            "1200",
            "--sessions",
            "3",
            "--dist",
            "zipf:0.99",
            "--cache",
            cache,
            "--out",
            out,
            "-q",
        ]
        .into_iter()
        .map(String::from)
        .collect::<Vec<_>>()
    };
    let a: Vec<String> = args("a", "cold");
    ok(
        dir.path(),
        &a.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    );
    let ra = join(dir.path(), "a");
    let r = report_json(dir.path(), &ra);
    let e = event(&r, "lookup");
    assert_eq!(e["count"], 1200, "--ops is the run's total: {e}");
    assert_eq!(e["errors"], 0);
    assert_summary_sane(e);
    let n = notes(&ra);
    assert!(n[0].contains("created and filled"), "{n:?}");
    assert!(
        n.iter()
            .any(|l| l.starts_with("cold: OS page cache") && l.contains("emptied")),
        "{n:?}"
    );
    assert_eq!(r["lookup"]["rows"], 3000, "{}", r["lookup"]);
    let m = manifest(&ra);
    assert_eq!(m["workload"]["params"]["dist"], "zipf:0.99");
    assert_eq!(m["runner"]["ops_per_session"], 400);

    let b: Vec<String> = args("b", "warm");
    ok(
        dir.path(),
        &b.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
    );
    let n = notes(&join(dir.path(), "b"));
    assert!(n[0].contains("reused"), "{n:?}");
    assert!(n.iter().any(|l| l.starts_with("warm:")), "{n:?}");

    // Another shape is refused with the way out; --fresh recreates.
    fails(
        dir.path(),
        &Argv::run("lookup")
            .target(&db)
            .rows(4000)
            .ops(10)
            .out("c")
            .quiet()
            .args(),
        2,
        &["filled for rows=3000", "add --fresh"],
    );
    ok(
        dir.path(),
        &Argv::run("lookup")
            .target(&db)
            .rows(4000)
            .ops(10)
            .fresh()
            .out("d")
            .quiet()
            .args(),
    );
    let conn = rusqlite::Connection::open(dir.path().join("l.db")).unwrap();
    let n: i64 = conn
        .query_row("SELECT count(*) FROM dbscope_lookup", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 4000);
}

#[test]
fn lookup_on_sqlite_places_the_table_in_the_directory() {
    let dir = tempdir();
    let place = dir.path().join("flash");
    std::fs::create_dir(&place).unwrap();
    ok(
        dir.path(),
        &Argv::run("lookup")
            .rows(500)
            .ops(100)
            .sessions(2)
            .opt("--tablespace-dir", s(&place))
            .opt("--row-bytes", 50)
            .out("r")
            .quiet()
            .args(),
    );
    let file = place.join("dbscope_lookup.sqlite");
    let conn = rusqlite::Connection::open(&file).unwrap();
    let n: i64 = conn
        .query_row(
            "SELECT count(*) FROM dbscope_lookup WHERE length(pad) = 42",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(n, 500, "the table lives in {}", file.display());
    let r = report_json(dir.path(), &join(dir.path(), "r"));
    assert_eq!(event(&r, "lookup")["count"], 100);
}

#[test]
fn lookup_bad_input_is_a_clear_error() {
    let dir = tempdir();
    fails(
        dir.path(),
        &Argv::run("lookup").rows(0).ops(1).args(),
        2,
        &["--rows must be at least 1"],
    );
    fails(
        dir.path(),
        &Argv::run("lookup").rows(10).ops(10).sessions(3).args(),
        2,
        &["must split evenly over --sessions 3"],
    );
    fails(
        dir.path(),
        &Argv::run("lookup")
            .rows(10)
            .ops(1)
            .opt("--tablespace-dir", "/nonexistent/dir")
            .args(),
        2,
        &["--tablespace-dir /nonexistent/dir", "must exist"],
    );
    fails(
        dir.path(),
        &Argv::run("lookup").rows(10).opt("--dist", "zipf:0").args(),
        2,
        &["--dist \"zipf:0\""],
    );
    fails(
        dir.path(),
        &Argv::run("lookup").rows(10).opt("--cache", "hot").args(),
        2,
        &["--cache \"hot\""],
    );
    fails(
        dir.path(),
        &Argv::run("lookup").ops("200000000000").args(),
        2,
        &[
            "--ops 200000000000 is over 100 lookups per key",
            "give --rows",
        ],
    );
    fails(
        dir.path(),
        &Argv::run("lookup").rows(10).opt("--row-bytes", 4).args(),
        2,
        &["--row-bytes 4"],
    );
}

/// Buffer hits and reads of the lookup table and its index so far (pg_statio), summed.
fn statio(pg: &PgCluster, db: &str) -> (i64, i64) {
    let row = pg.query(
        db,
        "SELECT coalesce(sum(heap_blks_hit + coalesce(idx_blks_hit, 0)), 0)::bigint, \
                coalesce(sum(heap_blks_read + coalesce(idx_blks_read, 0)), 0)::bigint \
         FROM pg_statio_user_tables WHERE relname = 'dbscope_lookup'",
    );
    let (h, r) = row.split_once('|').unwrap();
    (h.parse().unwrap(), r.parse().unwrap())
}

#[test]
fn lookup_on_postgres_warm_hits_the_buffers() {
    let pg = PgCluster::shared();
    let db = pg.create_db("lookup");
    let uri = pg.uri(&db);
    let dir = tempdir();
    let run_once = |out: &str, cache: &str| {
        ok(
            dir.path(),
            &Argv::run("lookup")
                .target(&uri)
                .rows(20000)
                .ops(4000)
                .sessions(4)
                .opt("--cache", cache)
                .out(out)
                .quiet()
                .args(),
        );
        join(dir.path(), out)
    };
    let first = run_once("a", "warm");
    assert!(
        notes(&first)[0].contains("filled by COPY"),
        "{:?}",
        notes(&first)
    );
    assert_eq!(
        pg.query(&db, "SELECT count(*) FROM dbscope_lookup"),
        "20000"
    );
    let before = statio(pg, &db);
    let second = run_once("b", "warm");
    let n = notes(&second);
    assert!(n[0].contains("reused"), "{n:?}");
    assert!(n.iter().any(|l| l.starts_with("warm: ")), "{n:?}");
    let r = report_json(dir.path(), &second);
    assert_eq!(event(&r, "lookup")["count"], 4000);
    // The backends' statistics are flushed as they exit, just after the run ends.
    let mut after = statio(pg, &db);
    for _ in 0..50 {
        if after.0 - before.0 >= 8000 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        after = statio(pg, &db);
    }
    let (hits, reads) = (after.0 - before.0, after.1 - before.1);
    assert!(
        hits >= 8000,
        "each lookup reads an index and a heap block: {hits} hits"
    );
    let ratio = hits as f64 / (hits + reads) as f64;
    assert!(
        ratio > 0.99,
        "warm: hit ratio {ratio} ({hits} hits, {reads} reads)"
    );

    let cold = run_once("c", "cold");
    let n = notes(&cold);
    assert!(
        n.iter().any(|l| l.contains("shared_buffers: NOT emptied")),
        "{n:?}"
    );
    assert!(
        n.iter()
            .any(|l| l.starts_with("cold: OS page cache of dbscope_lookup: emptied")),
        "the server runs here, so its files are reachable: {n:?}"
    );
}

/// `--cache cold --restart-cmd`: the server restarted after setup has empty shared_buffers, so
/// the lookups read blocks (a warm run of the same lookups reads none); the restart is recorded.
/// A restart command that fails stops the run before any lookup, saying why.
#[test]
fn lookup_cold_with_a_restart_reads_the_blocks() {
    let cluster = PgCluster::throwaway(&[]);
    let pg = &cluster;
    let db = pg.create_db("lookup_restart");
    let uri = pg.uri(&db);
    let dir = tempdir();
    let restart = pg.restart_shell_command();
    let run_once = |out: &str, cache: &[&str]| {
        let mut a = vec![
            "run",
            "lookup",
            "--target",
            &uri,
            "--rows",
            "20000",
            "--ops",
            "2000",
            "--sessions",
            "2",
            "--out",
            out,
            "-q",
        ];
        a.extend_from_slice(cache);
        ok(dir.path(), &a);
        join(dir.path(), out)
    };
    run_once("warm1", &["--cache", "warm"]);
    let (h0, r0) = statio(pg, &db);
    run_once("warm2", &["--cache", "warm"]);
    let settle = |min_hits: i64| {
        let mut now = statio(pg, &db);
        for _ in 0..50 {
            if now.0 >= min_hits {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
            now = statio(pg, &db);
        }
        now
    };
    let (h1, r1) = settle(h0 + 4000);
    assert_eq!(r1 - r0, 0, "warm: no block read ({} hits)", h1 - h0);

    let cold = run_once("cold", &["--cache", "cold", "--restart-cmd", &restart]);
    let n = notes(&cold);
    assert!(
        n.iter()
            .any(|l| l.starts_with("cold: server restarted by --restart-cmd")),
        "{n:?}"
    );
    assert!(!n.iter().any(|l| l.contains("NOT emptied")), "{n:?}");
    let (h2, r2) = settle(h1 + 1);
    assert!(
        r2 - r1 > 100,
        "cold after a restart: the lookups read blocks ({} reads, {} hits)",
        r2 - r1,
        h2 - h1
    );
    let r = report_json(dir.path(), &cold);
    assert_eq!(event(&r, "lookup")["count"], 2000);

    let refused = |cache: &str, cmd: &str, expect: &[&str]| {
        let out = dir.path().join("never");
        let args = [
            "run", "lookup", "--target", &uri, "--rows", "20000", "--ops", "10",
        ];
        let more = [
            "--cache",
            cache,
            "--restart-cmd",
            cmd,
            "--out",
            s(&out),
            "-q",
        ];
        fails(dir.path(), &[&args[..], &more[..]].concat(), 2, expect);
    };
    refused(
        "cold",
        "echo no such service >&2; exit 3",
        &["--restart-cmd", "failed", "no such service"],
    );
    refused("warm", "true", &["--restart-cmd", "--cache cold"]);
}

fn server_uid() -> Option<u32> {
    // Tests run as root start the server as `postgres`, otherwise as the current user.
    let out = std::process::Command::new("id")
        .args(["-u", "postgres"])
        .output()
        .ok()?;
    let me = std::process::Command::new("id").arg("-u").output().ok()?;
    if String::from_utf8_lossy(&me.stdout).trim() != "0" {
        return None;
    }
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

#[test]
fn lookup_on_postgres_in_a_tablespace_and_a_directory_it_cannot_use() {
    let pg = PgCluster::shared();
    let db = pg.create_db("lookup_ts");
    let uri = pg.uri(&db);
    let dir = tempdir();
    let place = dir.path().join("flash");
    std::fs::create_dir(&place).unwrap();
    let bad = dir.path().join("root_only");
    std::fs::create_dir(&bad).unwrap();
    if let Some(uid) = server_uid() {
        std::os::unix::fs::chown(&place, Some(uid), Some(uid)).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&bad, std::fs::Permissions::from_mode(0o700)).unwrap();
        fails(
            dir.path(),
            &Argv::run("lookup")
                .target(&uri)
                .rows(100)
                .ops(10)
                .opt("--tablespace-dir", s(&bad))
                .out("x")
                .quiet()
                .args(),
            2,
            &["could not create a tablespace", "owned by uid 0"],
        );
    }
    ok(
        dir.path(),
        &Argv::run("lookup")
            .target(&uri)
            .rows(1000)
            .ops(200)
            .opt("--tablespace-dir", s(&place))
            .out("r")
            .quiet()
            .args(),
    );
    let ts = pg.query(
        &db,
        "SELECT tablespace FROM pg_tables WHERE tablename = 'dbscope_lookup'",
    );
    assert!(
        ts.starts_with("dbscope_ts_"),
        "table in a dbscope tablespace: {ts:?}"
    );
    let loc = pg.query(
        &db,
        &format!("SELECT pg_tablespace_location(oid) FROM pg_tablespace WHERE spcname = '{ts}'"),
    );
    assert_eq!(loc, s(&place));
    let idx = pg.query(
        &db,
        "SELECT tablespace FROM pg_indexes WHERE indexname = 'dbscope_lookup_pkey'",
    );
    assert_eq!(idx, ts, "the index is placed too");
    // Leave the cluster without the tablespace (it is shared by every test).
    pg.query(&db, "DROP TABLE dbscope_lookup");
    pg.query(&db, &format!("DROP TABLESPACE {ts}"));
}

/// `dbscope ARGS` in `dir`, stdout and stderr to files, stopped and failed if it has not ended
/// within `limit`; `during` is called with the child once it started. Returns its exit code,
/// stderr and how long it took.
fn run_within(
    dir: &Path,
    args: &[&str],
    limit: std::time::Duration,
    during: impl FnOnce(&std::process::Child),
) -> (Option<i32>, String, std::time::Duration) {
    let err_path = dir.join(format!("stderr-{}", std::process::id()));
    let started = std::time::Instant::now();
    let mut child = dbscope(dir)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::fs::File::create(dir.join("stdout")).unwrap())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .expect("dbscope starts");
    during(&child);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "dbscope {args:?} still running after {limit:?} (hung): {}",
                std::fs::read_to_string(&err_path).unwrap_or_default()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let stderr = std::fs::read_to_string(&err_path).unwrap_or_default();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (status.code(), stderr, started.elapsed())
}

/// The pid a restart command wrote into `path` (waits for it a while).
fn pid_in(path: &Path) -> u32 {
    for _ in 0..200 {
        if let Some(p) = std::fs::read_to_string(path)
            .ok()
            .and_then(|s| s.trim().parse().ok())
        {
            return p;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("no pid in {}", path.display());
}

/// True while process `pid` runs (a zombie does not).
fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit_once(") ")
            .is_some_and(|(_, rest)| !rest.starts_with('Z'))
    })
}

/// Waits up to 5 s for `pid` to be gone.
fn gone(pid: u32) -> bool {
    for _ in 0..100 {
        if !running(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    false
}

/// Issue 34 item 13: `--restart-cmd` is done when the command exits, not when its output closes
/// (the docs' own `pg_ctl restart -m fast -w` without `-l` leaves the server holding it: the run
/// hung for over 10 minutes); a command that does not finish is ended at `--restart-timeout`
/// with a clear error; Ctrl-C while it runs stops the run, kept as interrupted.
#[test]
fn issue_34_restart_cmd_is_waited_for_by_its_exit_within_its_limit() {
    let cluster = PgCluster::throwaway(&[]);
    let pg = &cluster;
    let db = pg.create_db("lookup_restart_cmd");
    let uri = pg.uri(&db);
    let dir = tempdir();
    let d = dir.path();
    let secs = std::time::Duration::from_secs;
    let args = |out: &str, cmd: &str, more: &[&str]| -> Vec<String> {
        let mut a = Argv::run("lookup")
            .target(&uri)
            .rows(2000)
            .ops(200)
            .opt("--cache", "cold")
            .opt("--restart-cmd", cmd)
            .out(join(d, out).display())
            .quiet()
            .args()
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>();
        a.extend(more.iter().map(|s| s.to_string()));
        a
    };

    // The real thing: pg_ctl restart without -l.
    let a = args("pgctl", &pg.restart_shell_command_with(false), &[]);
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let (code, stderr, _) = run_within(d, &a, secs(120), |_| {});
    assert_eq!(code, Some(0), "{stderr}");
    let n = notes(&join(d, "pgctl"));
    assert!(
        n.iter()
            .any(|l| l.starts_with("cold: server restarted by --restart-cmd")),
        "{n:?}"
    );
    assert_eq!(manifest(&join(d, "pgctl"))["outcome"], "complete");

    // The brief's form: a background process holds the command's output open.
    let bg = join(d, "bg.pid");
    let cmd = format!("sleep 300 & echo $! > '{}'; echo restarted", bg.display());
    let a = args("held", &cmd, &[]);
    let (code, stderr, took) = run_within(
        d,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        secs(60),
        |_| {},
    );
    let sleeper = pid_in(&bg);
    assert!(running(sleeper), "what the command started is left running");
    std::process::Command::new("kill")
        .args(["-9", &sleeper.to_string()])
        .status()
        .unwrap();
    assert_eq!(code, Some(0), "{stderr}");
    assert!(took < secs(45), "took {took:?}");
    let n = notes(&join(d, "held"));
    assert!(
        n.iter().any(|l| l.contains("left processes running")),
        "{n:?}"
    );

    // Never done: ended at the limit, quickly, with its process group.
    let bg = join(d, "bg2.pid");
    let cmd = format!("sleep 300 & echo $! > '{}'; wait", bg.display());
    let a = args("limit", &cmd, &["--restart-timeout", "2s"]);
    let (code, stderr, took) = run_within(
        d,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        secs(60),
        |_| {},
    );
    assert_eq!(code, Some(2), "{stderr}");
    assert!(
        stderr.contains("did not finish within 2 s (--restart-timeout)")
            && stderr.contains("process group was ended"),
        "{stderr}"
    );
    assert!(took < secs(30), "took {took:?}");
    assert!(
        gone(pid_in(&bg)),
        "the command's background sleep was ended"
    );

    // Ctrl-C while it runs: the run stops, interrupted, its directory kept.
    let bg = join(d, "bg3.pid");
    let cmd = format!("sleep 300 & echo $! > '{}'; wait", bg.display());
    let a = args("ctrlc", &cmd, &[]);
    let (code, stderr, took) = run_within(
        d,
        &a.iter().map(String::as_str).collect::<Vec<_>>(),
        secs(60),
        |child| {
            pid_in(&bg);
            crate::crash::sigint(child);
        },
    );
    assert_eq!(code, Some(130), "{stderr}");
    assert!(took < secs(30), "took {took:?}");
    assert!(
        gone(pid_in(&bg)),
        "the command's background sleep was ended"
    );
    let run = join(d, "ctrlc");
    let m = manifest(&run);
    assert_eq!(m["outcome"], "interrupted", "{m}");
    assert!(
        m["outcome_detail"]
            .as_str()
            .is_some_and(|s| s.contains("during setup")),
        "{m}"
    );
    let n = notes(&run);
    assert!(
        n.iter()
            .any(|l| l.contains("stopped by the user") && l.contains("process group was ended")),
        "{n:?}"
    );
    // The run stopped before any session is an ordinary run: report reads it.
    let text = ok(d, &["report", s(&run)]);
    assert!(text.contains("interrupted"), "{text}");
}
