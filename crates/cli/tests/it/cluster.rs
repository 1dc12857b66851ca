//! `dbscope cluster scheduler|executor` and `tpch q1 --engine ballista` (issue 17): a real Ballista
//! scheduler and two executor processes (this `dbscope` binary) on free loopback ports, Q1 run both
//! ways with and without the combiner over `.tbl` and Parquet, every answer checked; each process
//! is killed when its guard drops, so a failing test leaves none behind.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::*;

/// A child process, killed and reaped on drop.
struct Node {
    name: String,
    child: Child,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Node {
    fn spawn(dir: &Path, name: &str, args: &[&str]) -> Node {
        let child = Command::new(env!("CARGO_BIN_EXE_dbscope"))
            .current_dir(dir)
            .args(args)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("dbscope starts");
        Node {
            name: name.into(),
            child,
        }
    }

    /// Waits for the node's first stderr line (it prints one when it is up) and returns it; a node
    /// that exits instead fails the test with what it said.
    fn first_line(&mut self) -> String {
        let mut line = String::new();
        let stderr = self.child.stderr.take().expect("stderr piped");
        let mut r = BufReader::new(stderr);
        r.read_line(&mut line).expect("read stderr");
        if line.is_empty() {
            let status = self.child.wait().expect("wait");
            panic!("{} exited ({status}) before it started", self.name);
        }
        // Keep draining so the node never blocks on a full pipe.
        std::thread::spawn(move || {
            let mut sink = String::new();
            while r.read_line(&mut sink).map(|n| n > 0).unwrap_or(false) {
                sink.clear();
            }
        });
        line
    }
}

/// A port nothing listens on now (bound, then released), with the next port free too.
fn free_port_pair() -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").expect("bind");
        let p = l.local_addr().unwrap().port();
        if p < u16::MAX && TcpListener::bind(("127.0.0.1", p + 1)).is_ok() {
            return p;
        }
    }
}

/// Waits until something accepts connections on `port` (the node is up), at most a minute.
fn wait_for_port(port: u16, what: &str) {
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{what} never listened on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A scheduler and two executors on free loopback ports.
pub(crate) struct Cluster {
    pub(crate) url: String,
    /// The scheduler, then the executors.
    nodes: Vec<Node>,
    /// The executors' Flight ports, in the order of `nodes[1..]`.
    flight_ports: Vec<u16>,
}

/// A scheduler (with `sched_extra` arguments) and two executors with `slots` slots each (and
/// `exec_extra`).
pub(crate) fn start_cluster(
    dir: &Path,
    slots: &str,
    sched_extra: &[&str],
    exec_extra: &[&str],
) -> Cluster {
    let port = free_port_pair();
    let bind = format!("127.0.0.1:{port}");
    let mut args = vec!["cluster", "scheduler", "--bind", &bind];
    args.extend_from_slice(sched_extra);
    let mut scheduler = Node::spawn(dir, "scheduler", &args);
    let line = scheduler.first_line();
    assert!(line.contains(&format!("listening on {bind}")), "{line}");
    wait_for_port(port, "the scheduler");
    let mut nodes = vec![scheduler];
    let mut flight_ports = Vec::new();
    for i in 1..=2 {
        let p = free_port_pair();
        flight_ports.push(p);
        let work = dir.join(format!("exec{i}"));
        let flight = format!("127.0.0.1:{p}");
        let mut args = vec![
            "cluster",
            "executor",
            "--scheduler",
            &bind,
            "--slots",
            slots,
            "--work-dir",
            s(&work),
            "--bind",
            &flight,
        ];
        args.extend_from_slice(exec_extra);
        let mut e = Node::spawn(dir, &format!("executor {i}"), &args);
        let line = e.first_line();
        assert!(
            line.contains(&format!("Arrow Flight on 127.0.0.1:{p}")),
            "{line}"
        );
        wait_for_port(p, "an executor");
        nodes.push(e);
    }
    Cluster {
        url: format!("df://{bind}"),
        nodes,
        flight_ports,
    }
}

/// The task events (`map`, `reduce`) of a run, exported as CSV, each a map of column to value.
fn task_events(dir: &Path, run: &Path) -> Vec<std::collections::HashMap<String, String>> {
    let csv = run.with_extension("csv");
    ok(dir, &["export", s(run), "-o", s(&csv)]);
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap().split(',').map(String::from).collect();
    lines
        .map(|l| {
            header
                .iter()
                .cloned()
                .zip(l.split(',').map(String::from))
                .collect()
        })
        .filter(|r: &std::collections::HashMap<String, String>| {
            r["event"] == "map" || r["event"] == "reduce"
        })
        .collect()
}

/// The number (as task events' `obj`) of the executor whose Flight port is `port`, from the run's
/// manifest.
fn executor_number(m: &serde_json::Value, port: u16) -> String {
    m["workload"]["params"]["executors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["port"] == port)
        .map(|e| e["number"].to_string())
        .unwrap_or_else(|| panic!("no executor on port {port}: {m}"))
}

/// The run's `cluster` counter section.
fn cluster_section(run: &Path) -> serde_json::Value {
    let counters: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("counters.json")).unwrap()).unwrap();
    counters["sections"]
        .as_array()
        .and_then(|a| a.iter().find(|s| s["key"] == "cluster"))
        .unwrap_or_else(|| panic!("no cluster section: {counters}"))
        .clone()
}

/// A counter of the run's `cluster` section.
fn cluster_counter(run: &Path, key: &str) -> serde_json::Value {
    let section = cluster_section(run);
    section["counters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == key)
        .map(|c| c["value"].clone())
        .unwrap_or_else(|| panic!("no counter {key}: {section}"))
}

/// DuckDB's Q1 answer over SF 0.01 lineitem.tbl (reference/tpch, committed).
fn duckdb_reference() -> Vec<String> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../reference/tpch/q1_sf0.01.duckdb.out");
    std::fs::read_to_string(p)
        .expect("reference/tpch/q1_sf0.01.duckdb.out")
        .lines()
        .map(String::from)
        .collect()
}

/// The answer table at the top of the output, checked against DuckDB's: flags, sums and counts
/// digit for digit; averages (DataFusion's DECIMAL(19,6), truncated) within 10⁻⁶ of DuckDB's.
fn assert_matches_duckdb(stdout: &str) -> Vec<String> {
    let lines: Vec<String> = stdout
        .lines()
        .take_while(|l| !l.is_empty())
        .map(String::from)
        .collect();
    let expected = duckdb_reference();
    assert_eq!(lines.len(), expected.len(), "{stdout}");
    assert_eq!(lines[0], expected[0]);
    for (got, exp) in lines[1..].iter().zip(&expected[1..]) {
        let g: Vec<&str> = got.split('|').collect();
        let e: Vec<&str> = exp.split('|').collect();
        assert_eq!(g.len(), 10, "{got}");
        for i in [0, 1, 2, 3, 4, 5, 9] {
            assert_eq!(g[i], e[i], "column {i}: {got} vs {exp}");
        }
        for i in 6..9 {
            assert_eq!(g[i].split('.').nth(1).map(str::len), Some(6), "{got}");
            let (a, b): (f64, f64) = (g[i].parse().unwrap(), e[i].parse().unwrap());
            assert!((0.0..1e-6).contains(&(b - a)), "column {i}: {got} vs {exp}");
        }
    }
    lines
}

#[test]
fn q1_on_a_ballista_cluster_both_ways_over_tbl_and_parquet() {
    let dir = tempdir();
    ok(
        dir.path(),
        &[
            "tpch", "gen", "--sf", "0.01", "--table", "lineitem", "--out", "tbl", "-q",
        ],
    );
    ok(
        dir.path(),
        &[
            "tpch",
            "gen",
            "--sf",
            "0.01",
            "--table",
            "lineitem",
            "--format",
            "parquet",
            "--row-group-rows",
            "8192",
            "--parts",
            "2",
            "--out",
            "pq",
            "-q",
        ],
    );
    let cluster = start_cluster(dir.path(), "2", &[], &[]);
    let mut answers = Vec::new();
    for data in ["tbl", "pq"] {
        for way in [
            &["--way", "sql"][..],
            &["--way", "mapreduce"],
            &["--way", "mapreduce", "--no-combiner"],
        ] {
            let mut args = vec![
                "tpch",
                "q1",
                data,
                "--engine",
                "ballista",
                "--scheduler",
                &cluster.url,
                "--mappers",
                "3",
            ];
            args.extend_from_slice(way);
            let out = ok(dir.path(), &args);
            let answer = assert_matches_duckdb(&out);
            assert!(
                out.contains(
                    "dbscope's exact local job: match — sums and counts to the last digit"
                ),
                "{args:?}: {out}"
            );
            let format = if data == "tbl" { "tbl" } else { "parquet" };
            assert!(
                out.contains(&format!(
                    "way {}, 3 map task(s), combiner {}, {format} file(s)",
                    way[1],
                    if way.len() == 3 { "off" } else { "on" }
                )),
                "{out}"
            );
            assert!(out.contains("59307 rows aggregated"), "{out}");
            // Issue 34 item 5: the combiner's effect in records shipped, and the compute time.
            let line = out
                .lines()
                .find(|l| l.contains("records shipped from map to reduce"))
                .unwrap_or_else(|| panic!("{out}"));
            let shipped: u64 = line
                .split_whitespace()
                .next()
                .unwrap()
                .replace(',', "")
                .parse()
                .unwrap();
            assert!(line.contains("(59,307 rows passed the filter)"), "{line}");
            if way.len() == 3 {
                assert_eq!(shipped, 59307, "without the combiner: {line}");
            } else {
                // At most one record per group (4) per map task (3).
                assert!(shipped <= 12, "with the combiner: {line}");
            }
            let compute: f64 = line
                .split("compute time ")
                .nth(1)
                .and_then(|t| t.split_whitespace().next())
                .and_then(|t| t.parse().ok())
                .unwrap_or_else(|| panic!("{line}"));
            assert!(compute > 0.0, "{line}");
            answers.push(answer);
        }
    }
    // Every way, over either format, prints the same digits.
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");

    // The job as a run (part 3): a task event per map and reduce task, the plan and the
    // cluster's shape in the manifest, Hadoop-style progress on stderr; `report` and `compare`
    // work on it as on the local job's run.
    let args = [
        "tpch",
        "q1",
        "tbl",
        "--engine",
        "ballista",
        "--scheduler",
        &cluster.url,
        "--way",
        "mapreduce",
        "--mappers",
        "3",
        "--repeat",
        "2",
        "--out",
        "run-mr",
    ];
    let out = run(dir.path(), &args);
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("stage 1: map 100% · stage 2: reduce 100%"),
        "{stderr}"
    );
    let mr = dir.path().join("run-mr");
    let m = manifest(&mr);
    let p = &m["workload"]["params"];
    assert_eq!(m["workload"]["name"], "tpch-q1-ballista-mapreduce");
    assert_eq!(m["outcome"], "complete");
    assert_eq!(m["target"]["kind"], "ballista");
    assert_eq!(p["executors"].as_array().map(Vec::len), Some(2), "{p}");
    assert_eq!(p["slots"], 4, "{p}");
    assert_eq!(p["job_ids"].as_array().map(Vec::len), Some(2), "{p}");
    assert!(
        p["plan"]
            .as_str()
            .unwrap()
            .contains("RepartitionExec: partitioning=Hash"),
        "{p}"
    );
    let report = report_json(dir.path(), &mr);
    assert_eq!(event(&report, "q1")["count"], 2, "{report}");
    // Each job's map stage covers the 3 splits; every task's output went to the shuffle.
    let maps = event(&report, "map");
    assert!(maps["count"].as_u64().unwrap() >= 2, "{maps}");
    assert_eq!(maps["errors"], 0, "{maps}");
    let reduces = event(&report, "reduce");
    assert!(reduces["count"].as_u64().unwrap() >= 2, "{reduces}");
    // Every task names the executor that ran it (obj: its number in the manifest) and the bytes
    // it wrote, from the scheduler's task ledger; the map stages' bytes add up to the counter,
    // and the executors table accounts for every task.
    let tasks = task_events(dir.path(), &mr);
    let numbers: Vec<String> = cluster
        .flight_ports
        .iter()
        .map(|&p| executor_number(&m, p))
        .collect();
    let mut map_bytes = 0i64;
    for t in &tasks {
        assert!(numbers.contains(&t["obj"]), "{t:?} not on {numbers:?}");
        assert_eq!(t["p3_name"], "bytes_out", "{t:?}");
        let bytes: i64 = t["p3"].parse().unwrap_or_else(|_| panic!("{t:?}"));
        assert!(bytes > 0, "a task that wrote rows wrote no bytes: {t:?}");
        if t["event"] == "map" {
            map_bytes += bytes;
        }
    }
    assert_eq!(cluster_counter(&mr, "shuffled_bytes"), map_bytes);
    let section = cluster_section(&mr);
    let exec_table = section["tables"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["key"] == "executors")
        .unwrap();
    let tasks_col = exec_table["columns"]
        .as_array()
        .unwrap()
        .iter()
        .position(|c| c["key"] == "tasks")
        .unwrap();
    let listed: i64 = exec_table["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r[tasks_col].as_i64().unwrap())
        .sum();
    assert_eq!(listed, tasks.len() as i64, "{exec_table}");
    ok(
        dir.path(),
        &[
            "tpch",
            "q1",
            "tbl",
            "--mappers",
            "3",
            "--repeat",
            "2",
            "--out",
            "run-local",
            "-q",
        ],
    );
    let cmp = ok(dir.path(), &["compare", "run-local", "run-mr"]);
    for name in ["q1", "map", "reduce"] {
        assert!(
            cmp.lines().any(|l| l.trim_start().starts_with(name)),
            "{name} in: {cmp}"
        );
    }
    ok(dir.path(), &["report", s(&mr), "--html", "mr.html"]);
    let html = std::fs::read_to_string(dir.path().join("mr.html")).unwrap();
    assert!(
        html.contains("Ballista cluster at"),
        "html lacks the cluster section"
    );

    // The plan: the combiner is a partial aggregate before the shuffle; without it, none.
    let explain = |extra: &[&str]| {
        let mut args = vec![
            "tpch",
            "q1",
            "tbl",
            "--engine",
            "ballista",
            "--scheduler",
            &cluster.url,
            "--way",
            "mapreduce",
            "--explain",
        ];
        args.extend_from_slice(extra);
        ok(dir.path(), &args)
    };
    let with = explain(&[]);
    assert!(
        with.contains("mode=Partial")
            && with.contains("mode=FinalPartitioned")
            && with.contains("RepartitionExec: partitioning=Hash"),
        "{with}"
    );
    let without = explain(&["--no-combiner"]);
    assert!(
        !without.contains("mode=Partial") && without.contains("mode=SinglePartitioned"),
        "{without}"
    );
}

#[test]
fn cluster_errors_name_the_address() {
    let dir = tempdir();
    let closed = free_port_pair();
    let addr = format!("127.0.0.1:{closed}");
    ok(
        dir.path(),
        &[
            "tpch", "gen", "--sf", "0.01", "--table", "lineitem", "--out", "tbl", "-q",
        ],
    );
    fails(
        dir.path(),
        &[
            "tpch",
            "q1",
            "tbl",
            "--engine",
            "ballista",
            "--scheduler",
            &format!("df://{addr}"),
        ],
        4,
        &[&format!(
            "the Ballista scheduler at {addr} cannot be reached"
        )],
    );
    fails(
        dir.path(),
        &[
            "cluster",
            "executor",
            "--scheduler",
            &addr,
            "--work-dir",
            "w",
            "--bind",
            "127.0.0.1:1",
        ],
        4,
        &[&format!(
            "the Ballista scheduler at {addr} cannot be reached"
        )],
    );
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    fails(
        dir.path(),
        &["cluster", "scheduler", "--bind", &taken],
        2,
        &[&format!("cannot listen on {taken} for the scheduler")],
    );
    fails(
        dir.path(),
        &["tpch", "q1", "tbl", "--engine", "ballista"],
        2,
        &["--engine ballista needs --scheduler df://HOST:PORT"],
    );
}

/// Issue 17 part 4: an executor killed (SIGKILL, as a crash) while the map stage runs. Ballista
/// either runs its tasks again on the other executor or fails the job; either way the run records
/// what happened and dbscope never prints a wrong answer as right.
#[test]
fn an_executor_killed_mid_job_is_recorded_and_never_gives_a_wrong_answer() {
    let dir = tempdir();
    ok(
        dir.path(),
        &[
            "tpch", "gen", "--sf", "0.1", "--table", "lineitem", "--out", "tbl", "-q",
        ],
    );
    // Short heartbeats so the scheduler notices the loss in seconds rather than minutes.
    let mut cluster = start_cluster(
        dir.path(),
        "1",
        &["--executor-timeout", "3"],
        &["--heartbeat", "1"],
    );
    let mut client = std::process::Command::new(env!("CARGO_BIN_EXE_dbscope"))
        .current_dir(dir.path())
        .args([
            "tpch",
            "q1",
            "tbl",
            "--engine",
            "ballista",
            "--scheduler",
            &cluster.url,
            "--way",
            "mapreduce",
            "--mappers",
            "12",
            "--out",
            "run-kill",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("dbscope starts");
    let stderr = client.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // Kill executor 2 once the map stage has finished some of its tasks but not all.
    let mut seen = Vec::new();
    let started = Instant::now();
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("no map progress within 2 minutes: {seen:?}"));
        seen.push(line.clone());
        let pct = line
            .strip_prefix("stage 1: map ")
            .and_then(|r| r.split('%').next())
            .and_then(|p| p.parse::<u32>().ok());
        if matches!(pct, Some(1..=99)) {
            break;
        }
        assert!(
            !line.starts_with("stage 1: map 100%"),
            "the map stage finished before the kill: {seen:?}"
        );
    }
    let victim = cluster.nodes.remove(2);
    drop(victim); // SIGKILL, then reaped
                  // The job ends one way or the other; a hang fails the test.
    let status = loop {
        if let Some(st) = client.try_wait().unwrap() {
            break st;
        }
        if started.elapsed() > Duration::from_secs(300) {
            let _ = client.kill();
            panic!("the job did not end within 5 minutes of the kill: {seen:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut stdout = String::new();
    std::io::Read::read_to_string(&mut client.stdout.take().unwrap(), &mut stdout).unwrap();
    seen.extend(rx.try_iter());
    let run = dir.path().join("run-kill");
    let m = manifest(&run);
    let failed = cluster_counter(&run, "tasks_failed").as_i64().unwrap();
    if status.success() {
        // Recovered: the answer was checked, and the lost tasks are in the run.
        assert!(
            stdout.contains("dbscope's exact local job: match"),
            "{stdout}"
        );
        assert!(failed > 0, "the kill left no failed task: {m}");
        assert!(
            stdout.contains("failed on the cluster and were run again by Ballista"),
            "{stdout}"
        );
        assert_eq!(m["outcome"], "complete", "{m}");
    } else {
        // Failed: a clear error naming the scheduler, the run recorded as failed, no answer
        // claimed as right.
        assert_eq!(status.code(), Some(1), "{seen:?}");
        let last = seen.last().cloned().unwrap_or_default();
        assert!(last.starts_with("dbscope: error: "), "{seen:?}");
        assert!(
            last.contains(cluster.url.trim_start_matches("df://")),
            "{last}"
        );
        assert!(!stdout.contains("match"), "{stdout}");
        assert_eq!(m["outcome"], "failed", "{m}");
    }
    // Either way, every task the scheduler reported is an event, the failed ones with Ballista's
    // reason as their outcome. A lost task that had finished (ResultLost with an executor: it
    // reported its end) finished on the killed executor, and the run says so (obj = its number);
    // one lost while running there never reported, so its executor is not claimed.
    let tasks = task_events(dir.path(), &run);
    assert!(tasks.iter().any(|t| t["event"] == "map"), "{tasks:?}");
    let failed_events: Vec<_> = tasks
        .iter()
        .filter(|t| t["outcome"] != "ok" && t["outcome"] != "unfinished")
        .collect();
    assert_eq!(failed_events.len() as i64, failed, "{tasks:?}");
    let victim_number = executor_number(&m, cluster.flight_ports[1]);
    for t in &failed_events {
        if t["outcome"] == "ResultLost" && !t["obj"].is_empty() {
            assert_eq!(t["obj"], victim_number, "{t:?} in {tasks:#?}");
        }
    }
}
