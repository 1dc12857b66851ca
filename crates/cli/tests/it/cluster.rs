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

/// A scheduler and two executors (2 slots each) on free loopback ports.
struct Cluster {
    url: String,
    _nodes: Vec<Node>,
}

fn start_cluster(dir: &Path) -> Cluster {
    let port = free_port_pair();
    let bind = format!("127.0.0.1:{port}");
    let mut scheduler = Node::spawn(dir, "scheduler", &["cluster", "scheduler", "--bind", &bind]);
    let line = scheduler.first_line();
    assert!(line.contains(&format!("listening on {bind}")), "{line}");
    wait_for_port(port, "the scheduler");
    let mut nodes = vec![scheduler];
    for i in 1..=2 {
        let p = free_port_pair();
        let work = dir.join(format!("exec{i}"));
        let mut e = Node::spawn(
            dir,
            &format!("executor {i}"),
            &[
                "cluster",
                "executor",
                "--scheduler",
                &bind,
                "--slots",
                "2",
                "--work-dir",
                s(&work),
                "--bind",
                &format!("127.0.0.1:{p}"),
            ],
        );
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
        _nodes: nodes,
    }
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
    let cluster = start_cluster(dir.path());
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
            answers.push(answer);
        }
    }
    // Every way, over either format, prints the same digits.
    assert!(answers.windows(2).all(|w| w[0] == w[1]), "{answers:?}");

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
        2,
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
        2,
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
