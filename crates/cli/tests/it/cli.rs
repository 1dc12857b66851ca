//! Running the binary and reading what it wrote.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// A `dbscope` command with a clean environment (no DATABASE_URL, no PG* variables) in `dir`.
pub fn dbscope(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_dbscope"));
    c.current_dir(dir).env_remove("DATABASE_URL");
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            c.env_remove(k);
        }
    }
    c
}

/// Runs `dbscope ARGS` in `dir` and returns its output.
pub fn run(dir: &Path, args: &[&str]) -> Output {
    dbscope(dir).args(args).output().expect("dbscope runs")
}

/// Runs and asserts success; returns stdout.
pub fn ok(dir: &Path, args: &[&str]) -> String {
    let out = run(dir, args);
    assert!(
        out.status.success(),
        "dbscope {args:?} failed ({:?}):\nstdout: {}\nstderr: {}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Runs and asserts failure with `code` and a one-line error that contains every `needles`.
pub fn fails(dir: &Path, args: &[&str], code: i32, needles: &[&str]) -> String {
    let out = run(dir, args);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(
        out.status.code(),
        Some(code),
        "dbscope {args:?}: expected exit {code}; stderr: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "panic: {stderr}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "expected one error line, got: {stderr}");
    assert!(lines[0].starts_with("dbscope: error: "), "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "expected {n:?} in: {stderr}");
    }
    stderr
}

/// `dbscope report RUN --json`, parsed.
pub fn report_json(dir: &Path, run: &Path) -> Value {
    let text = ok(dir, &["report", run.to_str().unwrap(), "--json"]);
    serde_json::from_str(&text).expect("report --json is JSON")
}

/// A manifest's target, checked to be a PostgreSQL server that told its version.
pub fn pg_target(m: &Value) -> &Value {
    let t = &m["target"];
    assert_eq!(t["kind"], "postgres", "{t}");
    assert!(
        t["server_version"]
            .as_str()
            .is_some_and(|v| v.starts_with("PostgreSQL ")),
        "{t}"
    );
    t
}

/// The manifest of a run, parsed.
pub fn manifest(run: &Path) -> Value {
    let text = std::fs::read_to_string(run.join("manifest.json")).expect("manifest.json");
    serde_json::from_str(&text).expect("manifest is JSON")
}

/// The report entry of one event name.
pub fn event<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["events"]
        .as_array()
        .expect("events array")
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no event {name} in report: {report}"))
}

/// Checks the summary of an event is internally consistent: ordered quantiles, mean in range.
pub fn assert_summary_sane(ev: &Value) {
    let s = &ev["summary_us"];
    let f = |k: &str| {
        s[k].as_f64()
            .unwrap_or_else(|| panic!("summary_us.{k} in {ev}"))
    };
    let (min, q1, med, mean, q3, max) =
        (f("min"), f("q1"), f("median"), f("mean"), f("q3"), f("max"));
    assert!(min <= q1 && q1 <= med && med <= q3 && q3 <= max, "{s}");
    assert!(min <= mean && mean <= max, "{s}");
    assert!(min > 0.0, "durations are positive: {s}");
    let p = &ev["percentiles_us"];
    let g = |k: &str| {
        p[k].as_f64()
            .unwrap_or_else(|| panic!("percentiles_us.{k} in {ev}"))
    };
    assert!(
        g("p90") <= g("p99") && g("p99") <= g("p99_9") && g("p99_9") <= g("p99_99"),
        "{p}"
    );
}

/// A fresh temporary directory.
pub fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().expect("temp dir")
}

/// Path as &str (tests use UTF-8 temp paths).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8 path")
}

/// `dir/name`.
pub fn join(dir: &Path, name: &str) -> PathBuf {
    dir.join(name)
}

/// `run commit` of 5 sessions × 300 on 2 shared client threads (`--threads 2`) into `dir/m`:
/// asserts the run says how it was driven and did exactly the work of 5 sessions with a thread
/// each; returns the run directory (the caller checks the database's rows).
pub fn commit_on_two_shared_threads(dir: &Path, uri: &str) -> PathBuf {
    ok(
        dir,
        &crate::common::argv::Argv::run("commit")
            .target(uri)
            .sessions(5)
            .opt("--threads", 2)
            .ops(300)
            .out("m")
            .quiet()
            .args(),
    );
    let run_dir = join(dir, "m");
    let m = manifest(&run_dir);
    assert_eq!(m["runner"]["threads"], 2, "{}", m["runner"]);
    let r = report_json(dir, &run_dir);
    for name in ["update", "commit"] {
        let e = event(&r, name);
        assert_eq!(e["count"], 1500, "{name}");
        assert_eq!(e["errors"], 0, "{name}");
        assert_summary_sane(e);
    }
    let text = ok(dir, &["report", "m"]);
    assert!(
        text.contains("5 sessions  closed loop  on 2 client threads"),
        "{text}"
    );
    run_dir
}
