//! The commit workload on real SQLite files (the embedded default), and the null target.

use crate::cli::*;
use crate::common::argv::Argv;

fn sum_v(db: &std::path::Path) -> i64 {
    let conn = rusqlite::Connection::open(db).expect("open sqlite");
    conn.query_row("SELECT COALESCE(SUM(v), 0) FROM dbscope_commit", [], |r| {
        r.get(0)
    })
    .expect("sum")
}

fn row_values(db: &std::path::Path) -> Vec<i64> {
    let conn = rusqlite::Connection::open(db).expect("open sqlite");
    let mut st = conn
        .prepare("SELECT v FROM dbscope_commit ORDER BY id")
        .unwrap();
    st.query_map([], |r| r.get(0))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

#[test]
fn commit_run_counts_match_the_database() {
    let dir = tempdir();
    let db = join(dir.path(), "bench.db");
    let target = format!("sqlite:{}", s(&db));
    let out = ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .sessions(2)
            .ops(40)
            .out("r1")
            .quiet()
            .args(),
    );
    assert_eq!(out.trim(), "r1");
    let run = join(dir.path(), "r1");
    let m = manifest(&run);
    assert_eq!(m["outcome"], "complete");
    assert_eq!(m["format_version"], "2.0");
    assert_eq!(m["workload"]["name"], "commit");
    assert_eq!(m["seed"], 1);
    assert_eq!(m["runner"]["sessions"], 2);
    assert_eq!(m["target"]["kind"], "sqlite");
    assert!(m["target"]["server_version"]
        .as_str()
        .unwrap()
        .starts_with("SQLite 3."));
    for k in ["journal_mode", "synchronous", "page_size"] {
        assert!(
            m["target"]["settings_effective"][k].is_string(),
            "{k} recorded: {m}"
        );
    }
    assert!(m["host"]["uname"].as_str().unwrap().contains("Linux"));
    assert!(m["host"]["cpus"].as_u64().unwrap() >= 1);
    assert!(m["host"]["memory_bytes"].as_u64().unwrap() > 0);
    assert!(m["ended_utc"].is_string());
    assert_eq!(m["events_written"], 160);

    let r = report_json(dir.path(), &run);
    assert!(r["incomplete"].is_null());
    for name in ["update", "commit"] {
        let e = event(&r, name);
        assert_eq!(e["count"], 80, "{name}: sessions × ops");
        assert_eq!(e["errors"], 0);
        assert_summary_sane(e);
        assert!(e["throughput_per_s"].as_f64().unwrap() > 0.0);
    }
    assert_eq!(
        sum_v(&db),
        80,
        "the database saw every commit the run recorded"
    );
    assert_eq!(
        row_values(&db),
        vec![40, 40],
        "own keys: one row per session"
    );

    let text = ok(dir.path(), &["report", "r1"]);
    // R's summary() header; its column widths follow the values (a slow commit widens them).
    let header = ["Min.", "1st", "Qu.", "Median", "Mean", "3rd", "Qu.", "Max."];
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().take(8).eq(header.iter().copied())),
        "{text}"
    );
    assert!(text.contains("commit   n = 80"), "{text}");
}

#[test]
fn default_target_is_sqlite_inside_the_run_directory() {
    let dir = tempdir();
    let out = ok(dir.path(), &Argv::run("commit").duration("300ms").args());
    let runs: Vec<_> = std::fs::read_dir(join(dir.path(), "runs"))
        .expect("runs/ created")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    // Beside the run, the runs directory's catalogue (dbscope history) lists it.
    assert!(join(dir.path(), "runs/.dbscope-history.sqlite").is_file());
    let run = &runs[0];
    let name = run.file_name().unwrap().to_str().unwrap().to_string();
    assert!(
        name.ends_with("-commit") && name.len() == "20261202-174530-commit".len(),
        "{name}"
    );
    assert!(run.join("dbscope.sqlite").exists());
    let m = manifest(run);
    assert_eq!(m["target"]["kind"], "sqlite");
    assert!(m["target"]["location"]
        .as_str()
        .unwrap()
        .ends_with("dbscope.sqlite"));
    assert!((m["runner"]["duration_s"].as_f64().unwrap() - 0.3).abs() < 1e-9);
    // Without -q the run prints its report.
    assert!(out.contains("commit   n = "), "{out}");
    let r = report_json(dir.path(), run);
    let n = event(&r, "commit")["count"].as_i64().unwrap();
    assert_eq!(sum_v(&run.join("dbscope.sqlite")), n);
}

#[test]
fn issue_13_every_sqlite_session_makes_progress_by_default() {
    // The README's first command (shorter): four sessions of UPDATE + COMMIT on the default
    // SQLite target. SQLite's own busy handler let one session take the lock over and over while
    // others did one commit; the default handler retries promptly, so none is starved.
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .sessions(4)
            .duration("2s")
            .out("r")
            .quiet()
            .args(),
    );
    let run = join(dir.path(), "r");
    let r = report_json(dir.path(), &run);
    let spread = &event(&r, "commit")["sessions"];
    assert_eq!(
        spread["per_session"].as_object().unwrap().len(),
        4,
        "{spread}"
    );
    assert_eq!(spread["starved"], serde_json::json!([]), "{spread}");
    assert!(spread["min"].as_u64().unwrap() > 0, "{spread}");
    let m = manifest(&run);
    let handler = m["target"]["settings_effective"]["busy_handler"]
        .as_str()
        .unwrap();
    assert!(
        handler.starts_with("dbscope: retry every 50 µs"),
        "{handler}"
    );
    // The old behaviour is one flag away, and the manifest says which handler ran.
    ok(
        dir.path(),
        &Argv::run("commit")
            .sessions(2)
            .ops(20)
            .set("busy_timeout=30000")
            .out("old")
            .quiet()
            .args(),
    );
    let m = manifest(&join(dir.path(), "old"));
    let handler = m["target"]["settings_effective"]["busy_handler"]
        .as_str()
        .unwrap();
    assert!(handler.starts_with("sqlite busy_timeout"), "{handler}");
    assert_eq!(m["target"]["settings_effective"]["busy_timeout"], "30000");
}

#[test]
fn pragmas_are_applied_and_read_back() {
    let dir = tempdir();
    let db = join(dir.path(), "wal.db");
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(format!("sqlite:{}", s(&db)))
            .set("journal_mode=wal")
            .set("synchronous=full")
            .ops(5)
            .out("r")
            .quiet()
            .args(),
    );
    let m = manifest(&join(dir.path(), "r"));
    let t = &m["target"];
    assert_eq!(t["settings_effective"]["journal_mode"], "wal");
    assert_eq!(t["settings_effective"]["synchronous"], "2");
    assert_eq!(
        t["settings_requested"][0],
        serde_json::json!(["journal_mode", "wal"])
    );
    let text = ok(dir.path(), &["report", "r"]);
    assert!(
        text.contains("journal_mode") && text.contains("wal"),
        "{text}"
    );
}

#[test]
fn same_seed_same_operations() {
    let dir = tempdir();
    let go = |db: &str, seed: &str| {
        ok(
            dir.path(),
            &Argv::run("commit")
                .target(format!("sqlite:{db}"))
                .opt("--keys", "shared:10")
                .ops(300)
                .opt("--seed", seed)
                .out(format!("{db}.run"))
                .quiet()
                .args(),
        );
        row_values(&join(dir.path(), db))
    };
    let a = go("a.db", "7");
    let b = go("b.db", "7");
    let c = go("c.db", "8");
    assert_eq!(a.len(), 10);
    assert_eq!(a.iter().sum::<i64>(), 300);
    assert_eq!(a, b, "same seed: same keys updated");
    assert_ne!(a, c, "another seed: other keys");
    assert_eq!(
        manifest(&join(dir.path(), "a.db.run"))["workload"]["params"]["keys"],
        "shared:10"
    );
}

#[test]
fn fresh_recreates_the_table() {
    let dir = tempdir();
    let target = format!("sqlite:{}", s(&join(dir.path(), "f.db")));
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .ops(5)
            .out("a")
            .quiet()
            .args(),
    );
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .ops(5)
            .out("b")
            .quiet()
            .args(),
    );
    assert_eq!(
        sum_v(&join(dir.path(), "f.db")),
        10,
        "idempotent setup keeps rows"
    );
    ok(
        dir.path(),
        &Argv::run("commit")
            .target(&target)
            .ops(5)
            .out("c")
            .fresh()
            .quiet()
            .args(),
    );
    assert_eq!(
        sum_v(&join(dir.path(), "f.db")),
        5,
        "--fresh starts from zero"
    );
}

#[test]
fn warmup_events_are_flagged_and_left_out() {
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .duration("300ms")
            .opt("--warmup", "200ms")
            .out("w")
            .quiet()
            .args(),
    );
    let run = join(dir.path(), "w");
    let r = report_json(dir.path(), &run);
    let e = event(&r, "commit");
    let excluded = e["warmup_excluded"].as_u64().unwrap();
    let counted = e["count"].as_u64().unwrap();
    assert!(excluded > 0 && counted > 0, "{e}");
    let text = ok(dir.path(), &["report", "w", "--json", "--include-warmup"]);
    let all: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        event(&all, "commit")["count"].as_u64().unwrap(),
        excluded + counted
    );
    assert_eq!(event(&all, "commit")["warmup_excluded"], 0);

    // The export keeps warm-up events, flagged.
    ok(dir.path(), &["export", "w", "--format", "csv"]);
    let csv = std::fs::read_to_string(run.join("events.csv")).unwrap();
    // `warmup` is the 9th column (the event names here hold no commas).
    let warm = csv
        .lines()
        .filter(|l| l.split(',').nth(8) == Some("true"))
        .count() as u64;
    assert_eq!(warm, 2 * excluded, "update and commit of each warm-up op");
}

#[test]
fn null_target_measures_the_harness() {
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .sessions(2)
            .ops(50000)
            .out("n")
            .quiet()
            .args(),
    );
    let r = report_json(dir.path(), &join(dir.path(), "n"));
    assert_eq!(event(&r, "commit")["count"], 100_000);
    assert_eq!(event(&r, "update")["count"], 100_000);
    assert_eq!(manifest(&join(dir.path(), "n"))["target"]["kind"], "null");
}

#[test]
fn export_both_formats_read_back() {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .ops(1000)
            .out("e")
            .quiet()
            .args(),
    );
    let out = ok(
        dir.path(),
        &["export", "e", "--format", "parquet", "-o", "x.parquet"],
    );
    assert!(out.contains("wrote 2,000 rows"), "{out}");
    let f = std::fs::File::open(join(dir.path(), "x.parquet")).unwrap();
    let reader = SerializedFileReader::new(f).unwrap();
    assert_eq!(reader.metadata().file_metadata().num_rows(), 2000);
    let out = ok(dir.path(), &["export", "e"]);
    assert!(out.contains("events.csv"), "{out}");
    let csv = std::fs::read_to_string(join(dir.path(), "e/events.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2001);
    assert!(csv.starts_with(
        "session,event,start_utc,start_ns,duration_ns,intended_start_ns,outcome,rows,warmup"
    ));
}

/// Issue 34 items 1 and 2: `report` prints R's `summary()` lines, sd and type-7 percentiles of
/// the durations `export` writes, as R itself prints them (/usr/bin/Rscript on the CSV).
#[test]
fn issue_34_report_prints_what_r_prints_of_the_export() {
    if std::process::Command::new("Rscript")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("skipped: Rscript is not installed");
        return;
    }
    let dir = tempdir();
    ok(
        dir.path(),
        &Argv::run("commit")
            .target("null")
            .sessions(2)
            .ops(5000)
            .out("r")
            .quiet()
            .args(),
    );
    ok(dir.path(), &["export", "r", "-o", "r.csv"]);
    let script = r#"
d <- read.csv("r.csv")
d <- d[d$outcome == "ok" & !as.logical(d$warmup), ]
for (name in unique(d$event)) {
  x <- d$duration_ns[d$event == name] / 1000
  out <- capture.output(print(summary(x)))
  cat(name, "\n", sep = "")
  cat(sub(" +$", "", out[1]), "   (µs)\n", sep = "")
  cat(sub(" +$", "", out[2]), "\n", sep = "")
  q <- trimws(format(zapsmall(quantile(x, c(.9, .99, .999, .9999), names = FALSE)), digits = 4))
  cat("   sd ", trimws(format(sd(x), digits = 4)), "   p90 ", q[1], "   p99 ", q[2],
      "   p99.9 ", q[3], "   p99.99 ", q[4], "   (µs; percentiles as R's quantile())\n", sep = "")
}
"#;
    let r = std::process::Command::new("Rscript")
        .args(["-e", script])
        .current_dir(dir.path())
        .output()
        .expect("Rscript runs");
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let r_out = String::from_utf8_lossy(&r.stdout).into_owned();
    let report = ok(dir.path(), &["report", "r"]);
    let mut names = 0;
    for block in r_out.split_inclusive('\n').collect::<Vec<_>>().chunks(4) {
        let [name, head, values, pct] = block else {
            panic!("R printed {r_out}")
        };
        let want = format!("{head}{values}{pct}");
        let at = report
            .find(&format!("{}   n = ", name.trim()))
            .unwrap_or_else(|| panic!("no {name} in {report}"));
        assert!(
            report[at..].contains(&want),
            "R prints for {name}{want}\nreport printed:\n{report}"
        );
        names += 1;
    }
    assert_eq!(names, 2, "{r_out}");
}
