//! Tests of the report on made-up runs: figures as R computes them, text and JSON, incomplete runs.

use super::*;
use dbscope_core::fake::FakeRun;
use dbscope_core::manifest::{TargetInfo, WorkloadInfo};
use dbscope_core::{Event, NameTable, Outcome, RunDir, RunnerInfo};
use dbscope_core::{Manifest, EVENT_WARMUP};
use std::collections::BTreeMap;
use std::path::Path;

#[test]
fn issue_13_a_starved_session_is_shown_and_warned_about() {
    // What the README's first command showed: one session did thousands of commits, three
    // did one each.
    let dir = tempfile::tempdir().unwrap();
    let mut f = FakeRun::new(&dir.path().join("r"));
    let c = f.name("commit");
    let mut evs: Vec<Event> = (0..2000u64)
        .map(|i| FakeRun::event(c, 0, i * 1_000, 500))
        .collect();
    evs.extend((1..4u32).map(|s| FakeRun::event(c, s, 3_000_000_000, 3_000_000_000)));
    f.block(&evs);
    let run = f.finish();
    let r = build(&run, &ReportOptions::default()).unwrap();
    let sp = r.events[0].sessions.as_ref().expect("four sessions");
    assert_eq!((sp.min, sp.median, sp.max), (1, 1.0, 2000));
    // Jain: (2003)² / (4 · (2000² + 3)) = 0.25…
    assert!((sp.fairness - 2003.0f64.powi(2) / (4.0 * 4_000_003.0)).abs() < 1e-12);
    assert_eq!(sp.starved, vec![1, 2, 3]);
    let text = render_text(&r);
    assert!(
        text.contains("sessions 4: per session min 1  median 1  max 2,000  fairness (Jain) 0.25"),
        "{text}"
    );
    assert!(
        text.contains("WARNING: starved: session 1 (1), session 2 (1), session 3 (1)"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(json["events"][0]["sessions"]["per_session"]["0"], 2000);
    assert_eq!(json["events"][0]["sessions"]["starved"][2], 3);
    let page = crate::html::render_run(&run, &Default::default()).unwrap();
    assert!(
        page.html.contains("commit: starved sessions:"),
        "HTML warns too"
    );

    // Fair sessions: a spread, no warning.
    let mut f = FakeRun::new(&dir.path().join("fair"));
    let c = f.name("commit");
    let evs: Vec<Event> = (0..400u64)
        .map(|i| FakeRun::event(c, (i % 4) as u32, i * 1_000, 500))
        .collect();
    f.block(&evs);
    let r = build(&f.finish(), &ReportOptions::default()).unwrap();
    let sp = r.events[0].sessions.as_ref().unwrap();
    assert!(sp.starved.is_empty() && sp.fairness > 0.95, "{sp:?}");
    assert!(!render_text(&r).contains("WARNING: starved"));
}

const S: u64 = 1_000_000_000;

/// Durations in µs of the measured successful `commit` events.
const COMMIT_US: [f64; 10] = [
    12.0, 20.0, 25.5, 31.0, 18.25, 1020.0, 22.0, 27.0, 19.0, 40.125,
];

fn us(v: f64) -> u64 {
    (v * 1000.0).round() as u64
}

fn ev(names: &NameTable, name: &str, start_ns: u64, duration_ns: u64) -> Event {
    Event {
        name: names.intern(name),
        start_ns,
        duration_ns,
        ..Event::default()
    }
}

fn err(names: &NameTable, name: &str, class: &str, start_ns: u64) -> Event {
    Event {
        outcome: names.intern_outcome(class),
        ..ev(names, name, start_ns, 5_000)
    }
}

fn warm(e: Event) -> Event {
    Event {
        flags: EVENT_WARMUP,
        ..e
    }
}

fn manifest(outcome: Outcome) -> Manifest {
    let mut params = BTreeMap::new();
    params.insert("keys".to_string(), serde_json::json!("own"));
    params.insert("table".to_string(), serde_json::json!("dbscope_commit"));
    let mut m = Manifest::new(
        "workload",
        WorkloadInfo {
            name: "commit".into(),
            params,
        },
        1,
    );
    m.target = Some(TargetInfo {
        kind: "sqlite".into(),
        location: "runs/x/dbscope.sqlite".into(),
        server_version: "SQLite 3.50.2".into(),
        settings_requested: vec![("synchronous".into(), "normal".into())],
        settings_effective: [("journal_mode", "delete"), ("synchronous", "1")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    });
    m.runner = Some(RunnerInfo {
        sessions: 4,
        ops_per_session: None,
        duration_s: Some(2.0),
        warmup_s: 0.5,
        max_errors: Some(0),
        mode: "closed".into(),
        threads: None,
        connect_s: None,
    });
    m.outcome = outcome;
    if outcome != Outcome::Running {
        m.ended_utc = Some(m.started_utc + chrono::Duration::milliseconds(3_250));
    }
    m
}

/// The standard test run:
/// - warm-up: `commit` ok 15 µs at 0.1 s, `commit` error `pg:40P01` at 0.2 s;
/// - `commit`: the ten [`COMMIT_US`] durations starting at 1.0 s, 1.1 s, ...; errors `pg:40P01`
///   twice and `connection` once;
/// - `scan`: 1, 2, ..., 1000 µs, the last one ending at exactly 3.0 s (measured span 2.0 s);
/// - `lock_wait`: two `timeout` errors, nothing else.
fn write_standard(dir: &Path, outcome: Outcome) -> RunDir {
    let mut m = manifest(outcome);
    m.events_written = (outcome != Outcome::Running).then_some(1017);
    let mut w = FakeRun::with_manifest(dir, m);
    let names = w.names().clone();
    w.block(&[
        warm(ev(&names, "commit", S / 10, 15_000)),
        warm(err(&names, "commit", "pg:40P01", S / 5)),
    ]);
    let mut block: Vec<Event> = COMMIT_US
        .iter()
        .enumerate()
        .map(|(i, &d)| ev(&names, "commit", S + i as u64 * S / 10, us(d)))
        .collect();
    block.push(err(&names, "commit", "pg:40P01", S + S / 2));
    block.push(err(&names, "commit", "connection", S + S / 2));
    block.push(err(&names, "commit", "pg:40P01", S + S / 2));
    w.block(&block);
    let scan: Vec<Event> = (1..=1000u64)
        .map(|i| {
            let start = if i == 1000 {
                3 * S - 1_000_000
            } else {
                S + i * 1_000_000
            };
            ev(&names, "scan", start, i * 1000)
        })
        .collect();
    w.block(&scan);
    w.block(&[
        err(&names, "lock_wait", "timeout", 2 * S),
        err(&names, "lock_wait", "timeout", 2 * S),
    ]);
    w.finish()
}

fn event<'a>(r: &'a Report, name: &str) -> &'a EventReport {
    r.events.iter().find(|e| e.name == name).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn counts_errors_throughput_and_summary_match_r() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Complete);
    let r = build(&run, &ReportOptions::default()).unwrap();
    assert_eq!(r.incomplete, None);
    let names: Vec<&str> = r.events.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["commit", "scan", "lock_wait"]);
    assert_eq!(r.measured.events, 1010);
    assert_eq!(r.measured.errors, 5);
    assert_eq!(r.measured.warmup_excluded, 2);
    assert_eq!(r.measured.first_start_ns, Some(S));
    assert_eq!(r.measured.last_end_ns, Some(3 * S));
    assert_eq!(r.measured.span_s, Some(2.0));
    assert_eq!(r.read.events, 1017);
    assert!(close(r.run.elapsed_s.unwrap(), 3.25));

    let c = event(&r, "commit");
    assert_eq!(c.count, 10);
    assert_eq!(c.errors, 3);
    assert_eq!(
        c.error_classes,
        BTreeMap::from([("connection".to_string(), 1), ("pg:40P01".to_string(), 2)])
    );
    assert_eq!(c.warmup_excluded, 2);
    assert_eq!(c.throughput_per_s, Some(5.0));
    // R 4.x: x <- c(12, 20, 25.5, 31, 18.25, 1020, 22, 27, 19, 40.125)
    //        print(summary(x), digits = 15); print(sd(x), digits = 15)
    //   12.0000 19.2500 23.7500 123.4875 30.0000 1020.0000; sd 315.097992088264
    let s = c.summary_us.unwrap();
    let want = [12.0, 19.25, 23.75, 123.4875, 30.0, 1020.0];
    for (got, want) in s.six().iter().zip(want) {
        assert!(close(*got, want), "{got} vs {want}");
    }
    assert!((c.sd_us.unwrap() - 315.097992088264).abs() < 1e-9);

    let sc = event(&r, "scan");
    assert_eq!(sc.count, 1000);
    assert_eq!(sc.errors, 0);
    assert_eq!(sc.throughput_per_s, Some(500.0));
    // R: y <- 1:1000; print(summary(y), digits = 15); print(sd(y), digits = 15)
    //   1 250.75 500.5 500.5 750.25 1000; sd 288.819436095749
    let s = sc.summary_us.unwrap();
    for (got, want) in s
        .six()
        .iter()
        .zip([1.0, 250.75, 500.5, 500.5, 750.25, 1000.0])
    {
        assert!(close(*got, want), "{got} vs {want}");
    }
    assert!((sc.sd_us.unwrap() - 288.819436095749).abs() < 1e-9);
    // R: sprintf("%.17g", quantile(1:1000, c(.9, .99, .999, .9999))) (type 7), to the bit
    // (issue 34 item 2: report printed HDR approximations).
    let p = sc.percentiles_us.unwrap();
    assert!(p.exact);
    assert_eq!(
        [p.p90, p.p99, p.p99_9, p.p99_99],
        [900.1, 990.01, 999.001, 999.900_100_000_000_1]
    );

    let lw = event(&r, "lock_wait");
    assert_eq!((lw.count, lw.errors), (0, 2));
    assert_eq!(lw.error_classes.get("timeout"), Some(&2));
    assert_eq!(lw.throughput_per_s, Some(0.0));
    assert!(lw.summary_us.is_none() && lw.sd_us.is_none() && lw.percentiles_us.is_none());
}

#[test]
fn warmup_included_on_request() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Complete);
    let opts = ReportOptions {
        include_warmup: true,
    };
    let r = build(&run, &opts).unwrap();
    assert_eq!(r.measured.warmup_excluded, 0);
    assert_eq!(r.measured.first_start_ns, Some(S / 10));
    let c = event(&r, "commit");
    assert_eq!((c.count, c.errors, c.warmup_excluded), (11, 4, 0));
    assert_eq!(c.error_classes.get("pg:40P01"), Some(&3));
    assert!(close(c.throughput_per_s.unwrap(), 11.0 / 2.9));
    // R: summary(c(12, 20, 25.5, 31, 18.25, 1020, 22, 27, 19, 40.125, 15))
    //   12.00 18.62 22.00 113.62 29.00 1020.00 (1st Qu. 18.625, Mean 113.625)
    let s = c.summary_us.unwrap();
    for (got, want) in s
        .six()
        .iter()
        .zip([12.0, 18.625, 22.0, 113.625, 29.0, 1020.0])
    {
        assert!(close(*got, want), "{got} vs {want}");
    }
    let text = render_text(&r);
    assert!(text.contains("warm-up events included"), "{text}");
    assert!(!text.contains("warm-up: "), "{text}");
}

#[test]
fn text_has_r_summary_lines_verbatim() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Complete);
    let text = render_text(&build(&run, &ReportOptions::default()).unwrap());
    // R 4.x: summary(c(12, 20, 25.5, 31, 18.25, 1020, 22, 27, 19, 40.125)) prints (trailing
    // spaces aside):
    assert!(text.contains("   Min. 1st Qu.  Median    Mean 3rd Qu.    Max.   (µs)\n  12.00   19.25   23.75  123.49   30.00 1020.00\n"), "{text}");
    // R: summary(1:1000)
    assert!(
        text.contains("\n    1.0   250.8   500.5   500.5   750.2  1000.0\n"),
        "{text}"
    );
    assert!(text.starts_with("run       "), "{text}");
    assert!(
        text.contains("commit   n = 10   errors 3   5.0 /s\n"),
        "{text}"
    );
    assert!(
        text.contains("scan   n = 1,000   errors 0   500.0 /s\n"),
        "{text}"
    );
    assert!(text.contains("   sd 315.1   p90 "), "{text}");
    // R: format(zapsmall(quantile(1:1000, c(.9, .99, .999, .9999))), digits = 4)
    assert!(
        text.contains("   sd 288.8   p90 900.1   p99 990.0   p99.9 999.0   p99.99 999.9   (µs; percentiles as R's quantile())\n"),
        "{text}"
    );
    assert!(
        text.contains("   errors: pg:40P01 2, connection 1\n"),
        "{text}"
    );
    assert!(text.contains("   warm-up: 2 events left out\n"), "{text}");
    assert!(text.contains("lock_wait   n = 0   errors 2   0.0 /s\n   no successful events"));
    assert!(text.contains("workload  commit  keys=own  table=dbscope_commit  seed 1\n"));
    assert!(
        text.contains("settings  name          requested  effective\n"),
        "{text}"
    );
    assert!(
        text.contains("          synchronous   normal     1\n"),
        "{text}"
    );
    assert!(
        text.contains("          journal_mode  (default)  delete\n"),
        "{text}"
    );
    assert!(text.contains("measured  1,010 ok + 5 errors  in 2.000 s (first start to last end)  2 warm-up events left out\n"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() < 110, "too long: {line}");
    }
}

#[test]
fn json_parses_and_has_the_fields() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Complete);
    let json = render_json(&build(&run, &ReportOptions::default()).unwrap());
    assert!(json.ends_with("}\n"));
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["run"]["outcome"], "complete");
    assert_eq!(v["run"]["workload"], "commit");
    assert_eq!(v["run"]["params"]["keys"], "own");
    assert_eq!(v["run"]["target"]["kind"], "sqlite");
    assert_eq!(v["run"]["runner"]["sessions"], 4);
    assert!(v["incomplete"].is_null());
    assert_eq!(v["measured"]["span_s"], 2.0);
    assert_eq!(v["settings"][0]["name"], "synchronous");
    assert_eq!(v["settings"][0]["requested"], "normal");
    assert_eq!(v["settings"][1]["requested"], serde_json::Value::Null);
    let c = &v["events"][0];
    assert_eq!(c["name"], "commit");
    assert_eq!(c["count"], 10);
    assert_eq!(c["errors"], 3);
    assert_eq!(c["error_classes"]["pg:40P01"], 2);
    assert_eq!(c["warmup_excluded"], 2);
    assert_eq!(c["throughput_per_s"], 5.0);
    assert_eq!(c["summary_us"]["median"], 23.75);
    assert_eq!(c["summary_us"]["mean"], 123.4875);
    for k in ["min", "q1", "q3", "max"] {
        assert!(c["summary_us"][k].is_f64(), "{k}");
    }
    assert!(c["sd_us"].is_f64());
    for k in ["p90", "p99", "p99_9", "p99_99"] {
        assert!(c["percentiles_us"][k].is_f64(), "{k}");
    }
    assert!(v["events"][2]["summary_us"].is_null());
    assert!(v["events"][2]["percentiles_us"].is_null());
}

#[test]
fn running_run_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Running);
    let r = build(&run, &ReportOptions::default()).unwrap();
    let why = r.incomplete.clone().unwrap();
    assert!(why.contains("did not record an end"), "{why}");
    assert!(why.contains("8 complete blocks read"), "{why}");
    assert_eq!(event(&r, "commit").count, 10);
    let text = render_text(&r);
    assert!(
        text.starts_with("INCOMPLETE: the run did not record an end"),
        "{text}"
    );
    assert!(text.contains("(running: no end recorded)"), "{text}");
    assert!(text.contains("(no end recorded)"), "{text}");
}

#[test]
fn torn_tail_is_incomplete() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Complete);
    let path = dir.path().join("events.dsev");
    let len = std::fs::metadata(&path).unwrap().len();
    // Cut inside the last block (the two lock_wait errors), as a SIGKILL during write() could.
    let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(len - 30).unwrap();
    let r = build(&run, &ReportOptions::default()).unwrap();
    let why = r.incomplete.clone().unwrap();
    assert!(why.contains("torn block"), "{why}");
    assert!(why.contains("bytes ignored"), "{why}");
    assert!(why.contains("1017 events written but only 1015"), "{why}");
    assert!(r.read.ignored_bytes > 0);
    assert!(r.events.iter().all(|e| e.name != "lock_wait"));
    assert_eq!(event(&r, "scan").count, 1000);
    let text = render_text(&r);
    assert!(
        text.starts_with("INCOMPLETE: the event data ends early (torn block"),
        "{text}"
    );
    for line in text.lines() {
        assert!(line.chars().count() < 110, "too long: {line}");
    }
}

#[test]
fn interrupted_and_failed_are_announced() {
    for (outcome, head) in [
        (
            Outcome::Interrupted,
            "INTERRUPTED: the run was stopped early (SIGINT);",
        ),
        (
            Outcome::Failed,
            "FAILED: the run stopped on an error (SIGINT);",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut run = write_standard(dir.path(), outcome);
        run.manifest.outcome_detail = Some("SIGINT".into());
        let r = build(&run, &ReportOptions::default()).unwrap();
        assert_eq!(r.incomplete, None);
        let text = render_text(&r);
        assert!(text.starts_with(head), "{text}");
    }
}

#[test]
fn only_errors_and_zero_events_do_not_panic() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = manifest(Outcome::Complete);
    m.target = None;
    m.runner = None;
    let mut w = FakeRun::with_manifest(dir.path(), m);
    let names = w.names().clone();
    w.block(&[err(&names, "connect", "connection", 7)]);
    let run = w.finish();
    let r = build(&run, &ReportOptions::default()).unwrap();
    assert_eq!(r.events.len(), 1);
    let e = &r.events[0];
    assert_eq!((e.count, e.errors), (0, 1));
    assert_eq!(e.throughput_per_s, Some(0.0));
    let text = render_text(&r);
    assert!(
        text.contains("connect   n = 0   errors 1   0.0 /s\n"),
        "{text}"
    );
    assert!(text.contains("   errors: connection 1\n"), "{text}");
    assert!(text.contains("settings  (none recorded)\n"), "{text}");
    assert!(
        text.contains("measured  0 ok + 1 error  in 5.000 µs (first"),
        "{text}"
    );
    serde_json::from_str::<serde_json::Value>(&render_json(&r)).unwrap();

    // No events at all: an empty event file.
    let dir = tempfile::tempdir().unwrap();
    let run = FakeRun::with_manifest(dir.path(), manifest(Outcome::Complete)).finish();
    let r = build(&run, &ReportOptions::default()).unwrap();
    assert!(r.events.is_empty());
    assert_eq!(r.incomplete, None);
    assert_eq!(r.measured.span_s, None);
    let text = render_text(&r);
    assert!(
        text.contains("measured  0 ok + 0 errors  (no measured events)\n"),
        "{text}"
    );
    assert!(text.ends_with("\nno events recorded\n"), "{text}");
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(v["events"], serde_json::json!([]));
}

#[test]
fn missing_event_file_is_incomplete_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = FakeRun::with_manifest(dir.path(), manifest(Outcome::Complete)).finish();
    std::fs::remove_file(dir.path().join("events.dsev")).unwrap();
    let r = build(&run, &ReportOptions::default()).unwrap();
    assert_eq!(r.read.missing_files, ["events.dsev"]);
    let text = render_text(&r);
    assert!(
        text.starts_with("INCOMPLETE: event files missing: events.dsev\n"),
        "{text}"
    );
}

#[test]
fn names_resolve_per_event_file() {
    // Each event file interns its own names: id 1 is `a` in one file and `b` in the other.
    let dir = tempfile::tempdir().unwrap();
    let mut w = FakeRun::with_manifest(dir.path(), manifest(Outcome::Complete));
    for (file, first, second) in [("events.dsev", "a", "b"), ("two.dsev", "b", "a")] {
        if file != "events.dsev" {
            w.next_file(file);
        }
        let x = w.name(first);
        let y = w.name(second);
        let e = |name, d| FakeRun::event(name, 0, S, d);
        let d = if first == "a" { 1_000 } else { 2_000 };
        w.block(&[e(x, d), e(x, d), e(y, 3_000 - d)]);
    }
    let run = w.finish();
    let r = build(&run, &ReportOptions::default()).unwrap();
    let a = event(&r, "a");
    let b = event(&r, "b");
    assert_eq!((a.count, b.count), (3, 3));
    assert_eq!(a.summary_us.unwrap().min, 1.0);
    assert_eq!(a.summary_us.unwrap().max, 1.0);
    assert_eq!(b.summary_us.unwrap().min, 2.0);
    assert_eq!(b.summary_us.unwrap().max, 2.0);
    assert_eq!(a.sd_us, Some(0.0));
    // Both files' events start at 1 s; the latest ends 2 µs later.
    assert_eq!(r.measured.span_s, Some(2e-6));
    assert!(close(a.throughput_per_s.unwrap(), 1.5e6));
}

#[test]
fn counter_sections_print_after_the_events_whoever_wrote_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = FakeRun::new(&dir.path().join("run"));
    let c = f.name("commit");
    f.block(&[FakeRun::event(c, 0, S, 20_000)]);
    f.counters(crate::counters::tests::section(1200, 3.0, false));
    let mut clash = crate::counters::tests::section(7, 1.0, true);
    clash.key = "events".into();
    clash.title = "a section named like a report field".into();
    f.counters(clash);
    let run = f.finish();
    let r = build(&run, &ReportOptions::default()).unwrap();
    assert_eq!(r.incomplete, None);
    let v: serde_json::Value = serde_json::from_str(&render_json(&r)).unwrap();
    assert_eq!(v["redo"]["commits_per_write"], 3.0);
    assert_eq!(v["redo"]["final_counts"], false);
    assert_eq!(v["redo"]["destinations"][0]["writes"], 1200);
    assert_eq!(v["counters_events"]["commits"], 7);
    assert_eq!(v["events"][0]["name"], "commit");
    let text = render_text(&r);
    let events = text.find("commit   n = 1").unwrap();
    let redo = text.find("\n\nredo log writer\n").unwrap();
    assert!(events < redo, "{text}");
    assert!(
        text.contains("   commits 1,200   commits per write 3.00   "),
        "{text}"
    );
    assert!(
        text.contains("   name        writes   p99 (µs)\n"),
        "{text}"
    );
    assert!(text.contains("   counters are a snapshot taken while the run was going\n"));
    assert!(text.ends_with("a section named like a report field\n   commits 7   commits per write 1.00   sync fdatasync   outlier -   rate 1,234.5 MB/s\n   per destination\n   name        writes   p99 (µs)\n   fast         1,200       45.2\n   slow-disk        7          -\n   FL_PREVENTED_OUTLIERS counts races the fast log won\n"), "{text}");
    for line in text.lines() {
        assert!(line.chars().count() < 110, "too long: {line}");
    }
}

#[test]
fn unreadable_counters_make_the_report_incomplete_not_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let run = write_standard(dir.path(), Outcome::Complete);
    std::fs::write(dir.path().join("counters.json"), "{").unwrap();
    let r = build(&run, &ReportOptions::default()).unwrap();
    let why = r.incomplete.clone().unwrap();
    assert!(why.contains("run-level counters cannot be read"), "{why}");
    assert!(why.contains("not valid counters"), "{why}");
    assert_eq!(event(&r, "commit").count, 10);
    assert!(r.counters.is_empty());
}

#[test]
fn issue_34_session_medians_have_thousands_separators() {
    // Two sessions with 1,500 and 2,000 events: median 1,750; three with 1,000, 1,500, 2,001:
    // median 1,500; an even count gives a half (1,250.5).
    for (counts, want) in [
        (vec![1500u64, 2000], "median 1,750  max 2,000"),
        (vec![1000, 1500, 2001], "median 1,500  max 2,001"),
        (vec![1000, 1501], "median 1,250.5  max 1,501"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut f = FakeRun::new(&dir.path().join("r"));
        let c = f.name("commit");
        let mut evs = Vec::new();
        for (s, &n) in counts.iter().enumerate() {
            evs.extend((0..n).map(|i| FakeRun::event(c, s as u32, i * 1_000, 500)));
        }
        f.block(&evs);
        let text = render_text(&build(&f.finish(), &ReportOptions::default()).unwrap());
        assert!(text.contains(want), "{want}: {text}");
    }
}
