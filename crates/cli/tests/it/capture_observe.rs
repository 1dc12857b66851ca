//! Issue 34 item 10: a capture watches its upstream and a replay its target — counter snapshots,
//! the devices, and wait-event samples of exactly the sessions' backends (told by pid) — so
//! `report` has the "Database and OS" section for both and `compare CAP REPLAY` shows both sides.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::capture::{calls, pgbench_init, pgbench_through, spawn_proxy, transactions};
use crate::cli::{ok, s, tempdir};
use crate::common::pg::PgCluster;

/// Every line of a run's JSON-lines file.
fn lines(run: &Path, file: &str) -> Vec<Value> {
    std::fs::read_to_string(run.join(file))
        .unwrap_or_else(|e| panic!("{}: {e}", run.join(file).display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `pg_stat_database.<counter>` from the first snapshot to the end snapshot.
fn db_delta(run: &Path, counter: &str) -> f64 {
    let snaps = lines(run, "snapshots.jsonl");
    let first = &snaps[0];
    let last = snaps.last().unwrap();
    assert_eq!(first["label"], "start");
    assert_eq!(last["label"], "end");
    let at = |s: &Value| {
        s["sections"]["pg_stat_database"]["counters"][counter]
            .as_f64()
            .unwrap_or_else(|| panic!("no pg_stat_database.{counter} in {s}"))
    };
    at(last) - at(first)
}

/// The backend pids of the active-session samples, and the wait events they show.
fn sampled(run: &Path) -> (BTreeSet<u64>, BTreeSet<String>, usize) {
    let mut pids = BTreeSet::new();
    let mut events = BTreeSet::new();
    let mut n = 0;
    for l in lines(run, "samples.jsonl") {
        let Some(l) = l.get("sample") else {
            continue;
        };
        n += 1;
        pids.insert(l["pid"].as_u64().unwrap_or_else(|| panic!("no pid: {l}")));
        if let Some(e) = l["wait_event"].as_str() {
            events.insert(e.to_string());
        }
    }
    (pids, events, n)
}

/// A backend straight to the server, not through the proxy or the replay, sleeping the whole
/// time: its `PgSleep` wait must appear in no sample. Returns its pid and the thread.
fn bystander(pg: &'static PgCluster, db: &str, secs: u32) -> (u64, std::thread::JoinHandle<()>) {
    let mut c = pg.connect(db);
    let pid: i32 = c.query_one("SELECT pg_backend_pid()", &[]).unwrap().get(0);
    let h = std::thread::spawn(move || {
        c.batch_execute(&format!("SELECT pg_sleep({secs})"))
            .unwrap();
    });
    (pid as u64, h)
}

#[test]
fn a_capture_and_its_replay_watch_the_server_and_their_own_backends_only() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_observe");
    pgbench_init(pg, &db);
    let target = pg.uri(&db);
    let rp = format!("obs_{}", std::process::id());
    ok(
        d.path(),
        &["restore-point", "create", &rp, "--target", &target],
    );

    // The capture: its observer reads the application's database as the superuser.
    let proxy = spawn_proxy(
        d.path(),
        pg,
        "127.0.0.1:0",
        &["--observe", &target, "--sample-hz", "50"],
    );
    let (sleeper, sleeping) = bystander(pg, &db, 4);
    let out = pgbench_through(&proxy, pg, 4, 3, "simple", &db);
    let n = transactions(&out);
    assert!(n > 50, "{out}");
    let (_, cap) = proxy.stop();
    sleeping.join().unwrap();

    // Every captured session says which backend served it.
    let sessions: Vec<Value> = lines(&cap, "capture-calls.jsonl")
        .into_iter()
        .filter(|l| l["type"] == "session")
        .collect();
    let captured_pids: BTreeSet<u64> = sessions
        .iter()
        .map(|l| l["backend_pid"].as_u64().unwrap_or_else(|| panic!("{l}")))
        .collect();
    assert_eq!(captured_pids.len(), sessions.len(), "{sessions:?}");
    assert!(!captured_pids.contains(&sleeper));

    // The server's counters cover the captured traffic: at least one commit per transaction.
    let commits = db_delta(&cap, "xact_commit");
    assert!(
        commits >= n as f64,
        "xact_commit +{commits} < {n} transactions"
    );
    // The samples are of the captured backends only, and saw them work.
    let (pids, events, samples) = sampled(&cap);
    assert!(samples > 0, "no samples");
    assert!(
        pids.is_subset(&captured_pids),
        "sampled {pids:?}, captured {captured_pids:?}"
    );
    assert!(
        !events.contains("PgSleep"),
        "the bystander was sampled: {events:?}"
    );
    // The section, as a user reads it.
    let report = ok(d.path(), &["report", s(&cap)]);
    assert!(report.contains("Database and OS (postgres"), "{report}");
    assert!(
        report.contains("Top timed events (pg_stat_activity"),
        "{report}"
    );
    let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&cap), "--json"])).unwrap();
    let o = &r["observe"];
    assert!(
        o["top_events"]["db_time_samples"].as_u64().unwrap() > 0,
        "{o}"
    );
    assert!(
        !o["missing"]
            .as_object()
            .unwrap()
            .contains_key("pg_stat_activity"),
        "{o}"
    );
    // The capture names no tables: every user table's I/O is read, pgbench's among them.
    let tables = o["tables"].as_array().unwrap();
    let accounts = tables
        .iter()
        .find(|t| t["table"] == "pgbench_accounts")
        .unwrap_or_else(|| panic!("{tables:?}"));
    assert!(
        accounts["heap_blks_hit"].as_f64().unwrap() > 0.0,
        "{accounts}"
    );
    // This process is the proxy, not the application: its CPU is said as the proxy's.
    assert!(
        report.contains("capture proxy (dbscope, its observer included) CPU"),
        "{report}"
    );
    // A local server: its data directory's device is known, and so its iostat row.
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(cap.join("manifest.json")).unwrap()).unwrap();
    let places = manifest["storage"]["places"].as_array().unwrap();
    assert!(
        places
            .iter()
            .any(|p| p["role"] == "data" && p["device"].is_string()),
        "{places:?}"
    );
    assert!(!o["disks"].as_array().unwrap().is_empty(), "{o}");
    assert!(!manifest.to_string().contains(pg.password()));
    // The upstream's version and settings, read over the observer's connection.
    let t = crate::cli::pg_target(&manifest);
    assert!(
        t["settings_effective"]["wal_sync_method"].is_string(),
        "{t}"
    );

    // The replay, from the restore point (reset first: the reset ends every session of the
    // database, the bystander's too): its own backends watched the same way.
    ok(
        d.path(),
        &["restore-point", "reset", &rp, "--target", &target],
    );
    let run = d.path().join("replay");
    let (sleeper, sleeping) = bystander(pg, &db, 4);
    ok(
        d.path(),
        &[
            "replay",
            s(&cap),
            "--target",
            &target,
            "--sample-hz",
            "50",
            "--out",
            s(&run),
            "-q",
        ],
    );
    sleeping.join().unwrap();
    let commits = db_delta(&run, "xact_commit");
    assert!(commits >= n as f64, "replay: xact_commit +{commits} < {n}");
    let (pids, events, samples) = sampled(&run);
    assert!(samples > 0, "replay: no samples");
    assert!(!pids.contains(&sleeper), "replay sampled the bystander");
    assert!(!events.contains("PgSleep"), "replay: {events:?}");
    // Each replay session is a captured one: the samples' sessions are the capture's.
    let captured_sessions: BTreeSet<u64> = sessions
        .iter()
        .map(|l| l["session"].as_u64().unwrap())
        .collect();
    for l in lines(&run, "samples.jsonl") {
        if let Some(sess) = l.get("sample").map(|x| x["session"].as_u64().unwrap()) {
            assert!(captured_sessions.contains(&sess), "{l}");
        }
    }
    let report = ok(d.path(), &["report", s(&run)]);
    assert!(report.contains("Database and OS (postgres"), "{report}");

    // compare shows the database side of both.
    let cmp = ok(d.path(), &["compare", s(&cap), s(&run)]);
    assert!(cmp.contains("Database and OS, A → B"), "{cmp}");
    assert!(cmp.contains("Top timed events (% of DB time)"), "{cmp}");
    let c: Value =
        serde_json::from_str(&ok(d.path(), &["compare", s(&cap), s(&run), "--json"])).unwrap();
    for side in ["a", "b"] {
        assert!(
            c["observe"][side]["top_events"]["db_time_samples"]
                .as_u64()
                .unwrap()
                > 0,
            "{side}: {}",
            c["observe"]
        );
    }
    ok(
        d.path(),
        &["restore-point", "drop", &rp, "--target", &target],
    );
    // calls() reads the same file: one call per captured statement, none lost to the observer.
    assert!(calls(&cap).len() as u64 >= 7 * n);
}

/// An observer whose role may not read the captured sessions' activity (no pg_monitor, no
/// pg_read_all_settings) says what it lacks, and the capture still succeeds with what it can read;
/// an observer that cannot connect at all (the upstream as given carries no password) leaves the
/// figures missing with the reason, and the capture succeeds too.
#[test]
fn an_observer_without_pg_monitor_names_what_it_lacks_and_the_capture_succeeds() {
    let pg = PgCluster::shared();
    let d = tempdir();
    let db = pg.create_db("cap_observe_weak");
    pgbench_init(pg, &db);
    let role = format!("weak_{}", std::process::id());
    let password = "weak-Secret-42";
    pg.query(
        &db,
        &format!("CREATE ROLE {role} LOGIN PASSWORD '{password}'"),
    );
    let weak = format!(
        "postgres://{role}:{password}@/{db}?host={}&port={}",
        pg.socket_dir().display(),
        pg.port()
    );
    let proxy = spawn_proxy(
        d.path(),
        pg,
        "127.0.0.1:0",
        &["--observe", &weak, "--sample-hz", "50"],
    );
    let out = pgbench_through(&proxy, pg, 2, 2, "simple", &db);
    let n = transactions(&out);
    let (_, cap) = proxy.stop();
    assert!(calls(&cap).len() as u64 >= 7 * n);
    // What any role may read is there: the database's commits.
    let commits = db_delta(&cap, "xact_commit");
    assert!(commits >= n as f64, "xact_commit +{commits} < {n}");
    // The captured (superuser's) sessions were seen but not readable: no sample, and said so.
    let (_, _, samples) = sampled(&cap);
    assert_eq!(samples, 0, "samples of sessions the role may not see");
    let r: Value = serde_json::from_str(&ok(d.path(), &["report", s(&cap), "--json"])).unwrap();
    let missing = &r["observe"]["missing"];
    let activity = missing["pg_stat_activity"]
        .as_str()
        .unwrap_or_else(|| panic!("{missing}"));
    assert!(
        activity.contains(&role) && activity.contains("pg_monitor"),
        "{activity}"
    );
    let report = ok(d.path(), &["report", s(&cap)]);
    assert!(report.contains("grant it pg_monitor"), "{report}");
    // The data directory needs pg_read_all_settings: the manifest's storage says so.
    let manifest = std::fs::read_to_string(cap.join("manifest.json")).unwrap();
    assert!(manifest.contains("pg_read_all_settings"), "{manifest}");
    for f in ["manifest.json", "snapshots.jsonl", "samples.jsonl"] {
        let text = std::fs::read_to_string(cap.join(f)).unwrap();
        assert!(
            !text.contains(password),
            "{f} holds the observer's password"
        );
    }
    assert!(!report.contains(password));

    // The upstream as the tests give it has no user or password: the observer cannot log in.
    let d2 = tempdir();
    let proxy = spawn_proxy(d2.path(), pg, "127.0.0.1:0", &[]);
    let out = pgbench_through(&proxy, pg, 1, 1, "simple", &db);
    assert!(transactions(&out) > 0);
    let (_, cap) = proxy.stop();
    let r: Value = serde_json::from_str(&ok(d2.path(), &["report", s(&cap), "--json"])).unwrap();
    let missing = &r["observe"]["missing"];
    let why = missing["pg_stat_database"]
        .as_str()
        .unwrap_or_else(|| panic!("{missing}"));
    assert!(why.contains("cannot connect"), "{why}");
    assert!(!r.to_string().contains(pg.password()));
    pg.query(&db, &format!("DROP ROLE {role}"));

    // An observer of another database than the sessions': its counters are that database's, and
    // the report says which database the sessions used.
    let d3 = tempdir();
    let proxy = spawn_proxy(
        d3.path(),
        pg,
        "127.0.0.1:0",
        &["--observe", &pg.uri("postgres")],
    );
    let out = pgbench_through(&proxy, pg, 1, 1, "simple", &db);
    assert!(transactions(&out) > 0);
    let (_, cap) = proxy.stop();
    let r: Value = serde_json::from_str(&ok(d3.path(), &["report", s(&cap), "--json"])).unwrap();
    let notes = r["observe"]["notes"].to_string();
    assert!(
        notes.contains("are database postgres's") && notes.contains(&format!("used {db} (")),
        "{notes}"
    );
}
