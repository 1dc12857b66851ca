//! `dbscope history`: the run catalogue kept by every source, a killed run listed as incomplete,
//! filters and JSON, and the catalogue rebuilt identically from the manifests.

use serde_json::Value;

use crate::cli::*;
use crate::common::argv::Argv;

use crate::crash::{sigkill, start_and_wait};

fn history_json(dir: &std::path::Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["history", "runs", "--json"];
    args.extend_from_slice(extra);
    let v: Value = serde_json::from_str(&ok(dir, &args)).expect("history --json is JSON");
    v.as_array().expect("a list of runs").clone()
}

#[test]
fn history_lists_runs_of_several_sources_a_killed_one_as_incomplete_and_rebuilds_identically() {
    let dir = tempdir();
    let d = dir.path();
    // A run killed by SIGKILL: it never saves a final manifest.
    let mut child = start_and_wait(
        d,
        &Argv::run("commit")
            .duration("60s")
            .out("runs/killed")
            .args(),
        &join(d, "runs/killed"),
    );
    sigkill(&mut child);
    // A complete run with a setting, and an import (another source).
    ok(
        d,
        &Argv::run("commit")
            .ops(50)
            .out("runs/off")
            .set("synchronous=off")
            .args(),
    );
    let csv = join(d, "lat.csv");
    std::fs::write(&csv, "us\n100\n200\n300\n400\n").unwrap();
    ok(
        d,
        &[
            "import",
            "csv",
            s(&csv),
            "--event",
            "x",
            "--out",
            "runs/imported",
        ],
    );

    let all = history_json(d, &[]);
    let by = |name: &str| all.iter().find(|e| e["dir"] == name).cloned();
    assert_eq!(all.len(), 3, "{all:?}");
    let killed = by("killed").expect("the killed run is listed");
    assert_eq!(killed["outcome"], "running");
    assert!(killed["p99_ms"].is_null());
    let off = by("off").unwrap();
    assert_eq!(off["outcome"], "complete");
    assert_eq!(off["settings"], "synchronous=off");
    assert_eq!(off["headline_event"], "commit");
    assert!(off["p99_ms"].as_f64().unwrap() > 0.0);
    // R: quantile(c(100,200,300,400)/1000, c(.5,.99)) -> 0.250 0.397
    let imp = by("imported").unwrap();
    assert!(
        (imp["p50_ms"].as_f64().unwrap() - 0.25).abs() < 1e-12,
        "{imp}"
    );
    assert!(
        (imp["p99_ms"].as_f64().unwrap() - 0.397).abs() < 1e-12,
        "{imp}"
    );

    let text = ok(d, &["history", "runs"]);
    assert!(text.contains("incomplete"), "{text}");
    assert!(text.contains("3 runs, 1 incomplete"), "{text}");
    let only = history_json(d, &["--where", "synchronous=off"]);
    assert_eq!(only.len(), 1);
    assert_eq!(only[0]["dir"], "off");
    let trend = ok(
        d,
        &["history", "runs", "--workload", "commit", "--trend", "p99"],
    );
    assert!(trend.starts_with("p99 over 1 runs"), "{trend}");
    ok(
        d,
        &["history", "runs", "--trend", "p99", "--html", "trend.html"],
    );
    let html = std::fs::read_to_string(join(d, "trend.html")).unwrap();
    assert!(
        html.contains("p99 (ms) over 2 runs"),
        "the off run and the import"
    );
    assert!(html.contains("<td>imported</td>") && html.contains("<td>off</td>"));

    std::fs::remove_file(join(d, "runs/.dbscope-history.sqlite")).unwrap();
    assert_eq!(
        history_json(d, &[]),
        all,
        "rebuilt from the manifests on demand"
    );
    assert_eq!(history_json(d, &["--rebuild"]), all);
    fails(
        d,
        &["history", "nowhere"],
        3,
        &["nowhere: not a runs directory"],
    );
    let bad = run(d, &["history", "runs", "--where", "novalue"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("expected SETTING=VALUE"));
}

/// `compare --fail-if`: exit 5 on a regression, 0 on an improvement and on no difference; JSON
/// carries the gate, `--markdown` a one-paragraph summary.
#[test]
fn fail_if_gates_a_regression_and_passes_an_improvement_or_no_difference() {
    let dir = tempdir();
    let d = dir.path();
    // synchronous=full (the default) makes each commit an fsync; off makes it far faster.
    ok(d, &Argv::run("commit").ops(200).out("full").args());
    // 2,000 fast commits, not 200: a write stalled 100 ms behind the rest of the suite's I/O
    // adds 500 µs to the mean of 200 (as much as an fsync costs) and widens its interval past
    // the mean condition (a baseline test gating on the mean failed so once), 50 µs to 2,000.
    ok(
        d,
        &Argv::run("commit")
            .ops(2000)
            .set("synchronous=off")
            .out("off")
            .args(),
    );
    // p90, not p99: the fast side's p99 lands among its slowest 1 %, which a noisy machine
    // stalls (a CI run saw 3.3 ms among 20 µs ones when it had 200), so the p99 interval can
    // honestly span zero and that condition not hold. p90 needs a tenth of them stalled.
    let gate = ["--event", "commit", "--fail-if", "p90>+5%,mean>+5%"];
    let cmp = |a: &str, b: &str, extra: &[&str]| {
        let mut args = vec!["compare", a, b];
        args.extend_from_slice(&gate);
        args.extend_from_slice(extra);
        run(d, &args)
    };
    let regression = cmp("off", "full", &[]);
    assert_eq!(regression.status.code(), Some(5));
    let text = String::from_utf8_lossy(&regression.stdout);
    assert!(
        text.contains("gate FAILED: 2 condition(s) held (exit 5)"),
        "{text}"
    );

    let improvement = cmp("full", "off", &[]);
    assert_eq!(improvement.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&improvement.stdout).contains("gate passed"));

    let same = cmp("full", "full", &["--json"]);
    assert_eq!(same.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&same.stdout).unwrap();
    assert_eq!(v["gate"]["failed"], false);
    assert_eq!(v["gate"]["conditions"].as_array().unwrap().len(), 2);

    let md = cmp("off", "full", &["--markdown"]);
    assert_eq!(md.status.code(), Some(5));
    let md = String::from_utf8_lossy(&md.stdout);
    assert!(md.starts_with("❌ **dbscope: regression**"), "{md}");
    assert_eq!(md.trim_end().lines().count(), 1, "{md}");

    // Both runs last well under two seconds: throughput cannot be judged, and says so.
    let short = run(
        d,
        &[
            "compare",
            "off",
            "full",
            "--event",
            "commit",
            "--fail-if",
            "throughput<-3%",
        ],
    );
    assert_eq!(short.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&short.stdout).contains("not judged: no throughput interval"));

    let bad = run(d, &["compare", "off", "full", "--fail-if", "p99>5"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// Issue 33's test list: the catalogue lists a run of every source — run, io redo, tpch q1, trace
/// import, capture (in the directory beside `runs`, where the proxy wrote it), replay, transfer
/// (out and in), a sweep (its points in its `points` directory) — each with its workload and
/// outcome, and a rebuild from the manifests gives the same list.
#[test]
fn history_lists_a_run_of_every_source() {
    use crate::common::pg::PgCluster;
    let pg = PgCluster::shared();
    let dir = tempdir();
    let d = dir.path();
    let db = pg.create_db("history_sources");
    pg.query(
        &db,
        "CREATE TABLE t (id bigint PRIMARY KEY, v text); \
         INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 1000) g",
    );

    ok(d, &Argv::run("commit").ops(20).out("runs/commit").args());
    let log = join(d, "redo.log");
    let redo = [
        "io",
        "redo",
        "--dest",
        s(&log),
        "--ops",
        "50",
        "--log-size",
        "1MiB",
        "--out",
        "runs/redo",
        "-q",
    ];
    ok(d, &redo);
    let data = crate::tpch::gen(d, "lineitem", &[]);
    ok(d, &["tpch", "q1", s(&data), "--out", "runs/q1"]);
    let trc = crate::trace::fixture(crate::trace::MULTI);
    ok(d, &["trace", "import", s(&trc), "--out", "runs/trace"]);

    let proxy = crate::capture::start_proxy(d, pg);
    let out = std::process::Command::new(pg.psql())
        .args(["-X", "-h", "127.0.0.1", "-p", &proxy.port.to_string()])
        .args(["-U", pg.user(), "-d", &db, "-c", "SELECT count(*) FROM t"])
        .env("PGPASSWORD", pg.password())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The proxy's capture is `cap` beside `runs`: the catalogue of that directory lists it.
    let (_, cap) = proxy.stop();
    let beside: Value = serde_json::from_str(&ok(d, &["history", s(d), "--json"])).unwrap();
    let beside = beside.as_array().unwrap();
    assert_eq!(beside.len(), 1, "{beside:?}");
    assert_eq!(beside[0]["dir"], "cap");
    assert_eq!(beside[0]["source"], "capture");
    assert_eq!(beside[0]["outcome"], "complete");
    let target = pg.uri(&db);
    let replay = [
        "replay",
        s(&cap),
        "--target",
        &target,
        "--out",
        "runs/replay",
        "-q",
    ];
    ok(d, &replay);

    let from = crate::transfer::table_uri(pg, &db, "t");
    let files = join(d, "files");
    let out_run = [
        "transfer",
        "--from",
        &from,
        "--to",
        s(&files),
        "--run",
        "runs/out",
        "-q",
    ];
    ok(d, &out_run);
    pg.query(&db, "CREATE TABLE t2 (id bigint PRIMARY KEY, v text)");
    let to = crate::transfer::table_uri(pg, &db, "t2");
    let in_run = [
        "transfer",
        "--from",
        s(&files),
        "--to",
        &to,
        "--run",
        "runs/in",
        "-q",
    ];
    ok(d, &in_run);

    let sweep = [
        "sweep",
        "--sessions",
        "1,2",
        "--out",
        "runs/sweep",
        "--",
        "run",
        "commit",
        "--ops",
        "10",
    ];
    ok(d, &sweep);

    let all = history_json(d, &[]);
    let mut dirs: Vec<&str> = all.iter().map(|e| e["dir"].as_str().unwrap()).collect();
    dirs.sort();
    assert_eq!(
        dirs,
        ["commit", "in", "out", "q1", "redo", "replay", "sweep", "trace"],
        "{all:#?}"
    );
    for e in &all {
        assert_eq!(e["outcome"], "complete", "{e}");
        assert!(e["workload"].as_str().is_some_and(|w| !w.is_empty()), "{e}");
    }
    // A source's own headline event, not its most frequent one (q1's map tasks outnumber it).
    let q1 = all.iter().find(|e| e["dir"] == "q1").unwrap();
    assert_eq!(q1["headline_event"], "q1", "{q1}");
    assert_eq!(q1["ops"], 1, "{q1}");
    // The sweep's points are runs of the sweep's own runs directory, `points`.
    let points = ["history", "runs/sweep/points", "--json"];
    let points: Value = serde_json::from_str(&ok(d, &points)).unwrap();
    let points = points.as_array().unwrap();
    assert_eq!(points.len(), 2, "{points:?}");
    assert!(
        points.iter().all(|p| p["workload"] == "commit"),
        "{points:?}"
    );

    std::fs::remove_file(join(d, "runs/.dbscope-history.sqlite")).unwrap();
    assert_eq!(history_json(d, &[]), all, "rebuilt from the manifests");
}
