//! Tests of the HTML report on made-up runs: a snapshot of a run's page, plot titles, helpers.

use super::axes::{decade_ceil, decade_floor, format_nines, nice_max};
use super::*;
use dbscope_core::fake::FakeRun;
use dbscope_core::{Event, HostInfo, Manifest, Outcome, RunDir, WorkloadInfo};

/// A run with fixed facts and hand-made events, so its report is the same on every machine.
fn fixed_run(dir: &std::path::Path) -> RunDir {
    let mut m = Manifest::new(
        "workload",
        WorkloadInfo {
            name: "commit".into(),
            params: Default::default(),
        },
        7,
    );
    m.host = HostInfo {
        uname: "Linux test 6.1 x86_64".into(),
        hostname: "test".into(),
        cpus: 2,
        memory_bytes: 8 << 30,
        ..HostInfo::default()
    };
    m.started_utc = chrono::DateTime::from_timestamp(1_796_233_530, 0).unwrap();
    m.ended_utc = Some(chrono::DateTime::from_timestamp(1_796_233_533, 0).unwrap());
    m.clock_origin_unix_ns = 1_796_233_530_000_000_000;
    m.command_line = vec!["dbscope".into(), "run".into(), "commit".into()];
    m.outcome = Outcome::Complete;
    m.runner = Some(dbscope_core::RunnerInfo {
        sessions: 2,
        ops_per_session: Some(60),
        duration_s: None,
        warmup_s: 0.5,
        max_errors: Some(10),
        mode: "closed".into(),
        threads: None,
        connect_s: None,
    });
    let mut w = FakeRun::with_manifest(dir, m);
    let (u, c) = (w.name("update"), w.name("<commit>"));
    let evs: Vec<Event> = (0..120u64)
        .map(|i| Event {
            session: (i % 2) as u32,
            name: if i % 2 == 0 { u } else { c },
            start_ns: i * 25_000_000,
            duration_ns: 50_000 + (i * 7919 % 97) * 10_000,
            flags: if i < 20 {
                dbscope_core::EVENT_WARMUP
            } else {
                0
            },
            ..Event::default()
        })
        .collect();
    w.block(&evs);
    w.finish()
}

#[test]
fn run_report_html_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let run = fixed_run(&dir.path().join("fixed-run"));
    let page = render_run(
        &run,
        &HtmlOptions {
            include_warmup: false,
            top_n: 50,
        },
    )
    .unwrap();
    let html = page.html.replace(&run.path.display().to_string(), "RUN");
    assert_eq!(page.svgs.len(), 10);
    assert!(html.contains("&lt;commit&gt;") && !html.contains("<commit>"));
    insta::assert_snapshot!("run_report", html);
}

#[test]
fn issue_13_the_top_plot_says_how_many_it_shows() {
    let dir = tempfile::tempdir().unwrap();
    let mut f = FakeRun::new(&dir.path().join("r"));
    let c = f.name("commit");
    let evs: Vec<Event> = (0..37)
        .map(|i| FakeRun::event(c, 0, i * 1_000_000, 20_000 + i * 1_000))
        .collect();
    f.block(&evs);
    let page = render_run(&f.finish(), &HtmlOptions::default()).unwrap();
    assert!(page.html.contains("commit: the 37 largest, descending"));
    assert!(!page.html.contains("10,000 largest"));
}

#[test]
fn helpers() {
    assert_eq!(format_nines(0.0), "p0");
    assert_eq!(format_nines(2.0), "p99");
    assert_eq!(format_nines(5.0), "p99.999");
    assert_eq!(decade_floor(350.0), 100.0);
    assert_eq!(decade_ceil(350.0), 1000.0);
    assert_eq!(decade_ceil(1000.0), 10000.0);
    assert_eq!(nice_max(7.3), 8.0);
    assert_eq!(file_stem("log file sync"), "log-file-sync");
    assert_eq!(file_stem("\"><img>"), "img");
}

#[test]
fn counter_sections_become_tables() {
    let dir = tempfile::tempdir().unwrap();
    let fake = |name: &str, commits: i64| {
        let mut f = FakeRun::new(&dir.path().join(name));
        let c = f.name("commit");
        let evs: Vec<Event> = (0..5)
            .map(|i| FakeRun::event(c, 0, i * 1_000_000, 20_000 + i * 1_000))
            .collect();
        f.block(&evs);
        let mut sec = crate::counters::tests::section(commits, 3.0, name == "a");
        sec.title = "redo <log> writer".into();
        f.counters(sec);
        f.finish()
    };
    let (a, b) = (fake("a", 1200), fake("b", 1500));
    let page = render_run(&a, &HtmlOptions::default()).unwrap();
    let html = &page.html;
    let at = html
        .find("<h2>redo &lt;log&gt; writer</h2>")
        .expect("section title");
    assert!(
        at > html.find("<h2>Summary (µs)</h2>").unwrap(),
        "after the summary"
    );
    assert!(html.contains("<tr><th>commits per write</th><td>3.00</td></tr>"));
    assert!(html.contains("<tr><th>rate (MB/s)</th><td>1,234.5</td></tr>"));
    assert!(html.contains("<h3>per destination</h3><table class=\"num\"><thead><tr><th>name</th><th>writes</th><th>p99 (µs)</th></tr></thead><tbody><tr><td>fast</td><td>1,200</td><td>45.2</td></tr>"));
    assert!(!html.contains("snapshot"), "A's counters are final");
    let page = render_run(&b, &HtmlOptions::default()).unwrap();
    assert!(page
        .html
        .contains("<p>counters are a snapshot taken while the run was going.</p>"));

    let cmp = crate::compare::compare(&a, &b, &Default::default()).unwrap();
    let page = render_compare(&a, &b, &cmp, &HtmlOptions::default()).unwrap();
    let html = &page.html;
    assert!(
        html.contains("<h2>redo &lt;log&gt; writer: B against A</h2>"),
        "{html}"
    );
    assert!(html.contains(
        "<tr><td>commits</td><td>1,200</td><td>1,500</td><td>+300</td><td>+25.0%</td></tr>"
    ));
    assert!(html.contains("<p>B: counters are a snapshot"));
}
